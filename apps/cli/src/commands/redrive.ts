import { previewRedrive, type RedriveSelection, redrive } from '@onceq/core';
import { boolFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { chooseHandler, type HandlerChoice } from '../handler-choice.ts';
import { plural, table, toJson } from '../output.ts';

interface RedriveArgs {
  selection: RedriveSelection;
  /** Set for `--dry-run`: the handler the preview runs. */
  dryRun: HandlerChoice | null;
}

export const redriveCommand = defineCommand<RedriveArgs>({
  name: 'redrive',
  summary: 'return dead messages to ready for a new cycle (or preview with --dry-run)',
  usage: 'redrive (<id>…|--all) [--dry-run [--handler v1|v2|./file.ts]]',
  flags: [
    ['<id>…', 'the dead messages to redrive (anything not dead refuses the whole call)'],
    ['--all', 'every dead message'],
    ['--dry-run', 'change nothing: say which messages the handler would now accept'],
    [
      '--handler <v1|v2|./file.ts>',
      'with --dry-run: the handler to try (default: config "handler", then v1)',
    ],
  ],
  options: {
    all: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    handler: { type: 'string' },
  },
  opensStore: true,
  async parse({ values, positionals, config, ctx }) {
    const all = boolFlag(values, 'all') === true;
    if (all && positionals.length > 0)
      throw new UsageError('redrive takes event ids or --all, not both');
    if (!all && positionals.length === 0) throw new UsageError('redrive needs event ids or --all');
    const dryRun = boolFlag(values, 'dry-run') === true;
    const handlerFlag = stringFlag(values, 'handler');
    if (!dryRun && handlerFlag !== undefined) {
      throw new UsageError(
        '--handler only applies with --dry-run (a redrive itself runs no handler)',
      );
    }
    return {
      selection: all ? 'all' : [...new Set(positionals)],
      dryRun: dryRun ? await chooseHandler(handlerFlag, config, ctx.cwd) : null,
    };
  },
  async run(args, { store, json, ctx }) {
    if (args.dryRun !== null) {
      const choice = args.dryRun;
      const preview = await previewRedrive(store, args.selection, choice.handler);
      if (json) {
        ctx.out(
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
        return 0;
      }
      const accepted = preview.filter((p) => p.accepted).length;
      ctx.out(`dry run with handler ${choice.name}, nothing changed:`);
      const rows = preview.map((p) => [
        p.eventId,
        p.accepted ? 'accepted' : 'rejected',
        p.accepted ? '' : `${p.code}: ${p.detail}`,
      ]);
      for (const line of table(rows)) ctx.out(`  ${line}`);
      ctx.out(
        `${accepted} of ${plural(preview.length, 'dead message')} would be accepted by ${choice.name}`,
      );
      return 0;
    }
    const redriven = await redrive(store, args.selection);
    if (json) ctx.out(toJson({ redriven }));
    else if (redriven.length === 0) ctx.out('nothing to redrive: the DLQ is empty');
    else ctx.out(`redriven ${redriven.length}: ${redriven.join(', ')}`);
    return 0;
  },
});
