import { previewRedrive, type RedriveSelection, redrive } from '@onceq/core';
import type { HandlerVersion } from '@onceq/handler/versions';
import { boolFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { resolveHandler } from '../config.ts';
import { UsageError } from '../errors.ts';
import { plural, table, toJson } from '../output.ts';

interface RedriveArgs {
  selection: RedriveSelection;
  /** Set for `--dry-run`: the handler the preview runs. */
  dryRun: HandlerVersion | null;
}

export const redriveCommand = defineCommand<RedriveArgs>({
  name: 'redrive',
  summary: 'return dead messages to ready for a new cycle (or preview with --dry-run)',
  usage: 'redrive (<id>…|--all) [--dry-run [--handler v1|v2]]',
  flags: [
    ['<id>…', 'the dead messages to redrive (anything not dead refuses the whole call)'],
    ['--all', 'every dead message'],
    ['--dry-run', 'change nothing: say which messages the handler would now accept'],
    [
      '--handler <v1|v2>',
      'with --dry-run: the handler to try (default: config "handler", then v1)',
    ],
  ],
  options: {
    all: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    handler: { type: 'string' },
  },
  opensStore: true,
  parse({ values, positionals, config }) {
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
      dryRun: dryRun ? resolveHandler(handlerFlag, config) : null,
    };
  },
  async run(args, { store, json, ctx }) {
    if (args.dryRun !== null) {
      const { getHandler } = await import('@onceq/handler');
      const preview = await previewRedrive(store, args.selection, getHandler(args.dryRun));
      if (json) {
        ctx.out(
          toJson({
            dry_run: true,
            handler: args.dryRun,
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
      ctx.out(`dry run with handler ${args.dryRun}, nothing changed:`);
      const rows = preview.map((p) => [
        p.eventId,
        p.accepted ? 'accepted' : 'rejected',
        p.accepted ? '' : `${p.code}: ${p.detail}`,
      ]);
      for (const line of table(rows)) ctx.out(`  ${line}`);
      ctx.out(
        `${accepted} of ${plural(preview.length, 'dead message')} would be accepted by ${args.dryRun}`,
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
