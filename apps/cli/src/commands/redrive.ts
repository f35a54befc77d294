import type { RedrivePreview, RedriveSelection } from '@onceq/core';
import { previewRedrive, redrive } from '@onceq/core';
import { boolFlag, intFlag, queueFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { chooseHandler, HANDLER_FLAG, type HandlerChoice } from '../handler-choice.ts';
import { plural, table, toJson } from '../output.ts';

/** What a redrive does: move the selection, preview a handler on it, or move what a handler accepts. */
type RedriveMode =
  | { kind: 'all-selected' }
  | { kind: 'preview'; handler: HandlerChoice }
  | { kind: 'accepted-by'; handler: HandlerChoice };

interface RedriveArgs {
  selection: RedriveSelection;
  mode: RedriveMode;
  /** `--handler-timeout` for the preview's handler calls, ms. */
  timeoutMs: number | undefined;
}

export const redriveCommand = defineCommand<RedriveArgs>({
  name: 'redrive',
  summary: 'return dead messages to ready for a new cycle (or preview with --dry-run)',
  operands: {
    synopsis: '<id>…|--all',
    help: [['<id>…', 'the dead messages to redrive (anything not dead refuses the whole call)']],
  },
  flags: {
    all: { type: 'boolean', help: 'every dead message' },
    queue: {
      type: 'string',
      value: 'NAME',
      help: 'with --all: every dead message of this queue',
    },
    'dry-run': {
      type: 'boolean',
      help: 'change nothing: say which messages the handler would now accept',
    },
    handler: {
      ...HANDLER_FLAG,
      help: 'with --dry-run: the handler to try (default: config "handler", then v1)',
    },
    'accepted-by': {
      ...HANDLER_FLAG,
      help: 'redrive only the selected messages this handler now accepts (the dry run\'s "would be accepted"); the rest stay dead',
    },
    'handler-timeout': {
      type: 'string',
      value: 'S',
      help: "with --dry-run or --accepted-by: each handler call's deadline in seconds; past it the message counts as not accepted (handler_timeout); default none",
    },
  },
  opensStore: true,
  existingStore: true,
  examples: [
    'redrive E0004',
    'redrive --all --dry-run --handler v2',
    'redrive --all --accepted-by v2',
    'redrive --all --queue payments',
  ],
  async parse({ values, positionals, config, ctx }) {
    const all = boolFlag(values, 'all') === true;
    if (all && positionals.length > 0)
      throw new UsageError('redrive takes event ids or --all, not both');
    if (!all && positionals.length === 0) throw new UsageError('redrive needs event ids or --all');
    const dryRun = boolFlag(values, 'dry-run') === true;
    const handlerFlag = stringFlag(values, 'handler');
    const acceptedBy = stringFlag(values, 'accepted-by');
    if (acceptedBy !== undefined && (dryRun || handlerFlag !== undefined)) {
      throw new UsageError(
        '--accepted-by redrives; to preview, use --dry-run --handler without --accepted-by',
      );
    }
    if (!dryRun && handlerFlag !== undefined) {
      throw new UsageError(
        `--handler only applies with --dry-run (a redrive itself runs no handler); to redrive only the messages ${handlerFlag} now accepts, use --accepted-by ${handlerFlag}`,
      );
    }
    const queue = queueFlag(values);
    if (queue !== undefined && !all) {
      throw new UsageError(
        '--queue selects with --all: give --all --queue NAME, or event ids without --queue',
      );
    }
    const selection: RedriveSelection = all
      ? queue === undefined
        ? 'all'
        : { queue }
      : [...new Set(positionals)];
    const seconds = intFlag(values, 'handler-timeout', { min: 1, max: 86_400 });
    if (seconds !== undefined && !dryRun && acceptedBy === undefined) {
      throw new UsageError('--handler-timeout only applies with --dry-run or --accepted-by');
    }
    const timeoutMs = seconds === undefined ? undefined : seconds * 1000;
    if (acceptedBy !== undefined) {
      if (acceptedBy.trim() === '') throw new UsageError('--accepted-by needs a handler');
      const handler = await chooseHandler(acceptedBy, config, ctx.cwd, '--accepted-by');
      return { selection, mode: { kind: 'accepted-by', handler }, timeoutMs };
    }
    if (dryRun) {
      const handler = await chooseHandler(handlerFlag, config, ctx.cwd);
      return { selection, mode: { kind: 'preview', handler }, timeoutMs };
    }
    return { selection, mode: { kind: 'all-selected' }, timeoutMs };
  },
  async run(args, { store, json, ctx }) {
    const { mode } = args;
    if (mode.kind === 'all-selected') {
      const redriven = await redrive(store, args.selection);
      if (json) ctx.out(toJson({ redriven }));
      else if (redriven.length === 0) ctx.out(`nothing to redrive: ${emptyDlq(args.selection)}`);
      else ctx.out(`redriven ${redriven.length}: ${redriven.join(', ')}`);
      return 0;
    }
    const choice = mode.handler;
    const preview = await previewRedrive(store, args.selection, choice.handler, args.timeoutMs);
    if (mode.kind === 'preview') {
      printPreview(choice, preview, json, ctx.out);
      return 0;
    }
    // The accepted set, then one redrive of exactly those ids: all or nothing, so a
    // message that stopped being dead in between refuses the call and nothing moves.
    const accepted = preview.filter((p) => p.accepted).map((p) => p.eventId);
    const rejected = preview.filter((p) => !p.accepted);
    const redriven = accepted.length === 0 ? [] : await redrive(store, accepted);
    if (json) {
      ctx.out(
        toJson({
          handler: choice.name,
          redriven,
          still_dead: rejected.map((p) => ({
            event_id: p.eventId,
            code: p.code,
            detail: p.detail,
          })),
        }),
      );
      return 0;
    }
    const kept =
      rejected.length === 0
        ? ''
        : `; ${plural(rejected.length, 'message')} ${choice.name} still rejects stay dead`;
    if (redriven.length === 0) {
      ctx.out(
        preview.length === 0
          ? `nothing to redrive: ${emptyDlq(args.selection)}`
          : `nothing redriven: ${choice.name} accepts none of the ${plural(preview.length, 'dead message')}`,
      );
    } else {
      ctx.out(
        `redriven ${redriven.length} accepted by ${choice.name}: ${redriven.join(', ')}${kept}`,
      );
    }
    return 0;
  },
});

/** What an empty selection of dead messages is called. */
function emptyDlq(selection: RedriveSelection): string {
  return typeof selection === 'object' && 'queue' in selection
    ? `no dead messages in queue ${selection.queue}`
    : 'the DLQ is empty';
}

function printPreview(
  choice: HandlerChoice,
  preview: readonly RedrivePreview[],
  json: boolean,
  out: (line: string) => void,
): void {
  if (json) {
    out(
      toJson({
        dry_run: true,
        handler: choice.name,
        messages: preview.map((p) => ({
          event_id: p.eventId,
          accepted: p.accepted,
          code: p.code,
          detail: p.detail,
        })),
      }),
    );
    return;
  }
  const accepted = preview.filter((p) => p.accepted).length;
  out(`dry run with handler ${choice.name}, nothing changed:`);
  const rows = preview.map((p) => [
    p.eventId,
    p.accepted ? 'accepted' : 'rejected',
    p.accepted ? '' : `${p.code}: ${p.detail}`,
  ]);
  for (const line of table(rows)) out(`  ${line}`);
  out(
    `${accepted} of ${plural(preview.length, 'dead message')} would be accepted by ${choice.name}`,
  );
}
