import { DEFAULT_PRUNE_DUTY_CYCLE, type PruneResult, prune } from '@onceq/core';
import { boolFlag, expectPositionals, fractionFlag, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { parseDuration } from '../duration.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

interface PruneArgs {
  doneOlderThanSeconds?: number;
  deadOlderThanSeconds?: number;
  dryRun: boolean;
  vacuum: boolean;
  chunkSize?: number;
  dutyCycle?: number;
}

export const pruneCommand = defineCommand<PruneArgs>({
  name: 'prune',
  summary: 'remove old finished payloads, keep tombstones so repeats stay duplicates',
  flags: {
    'done-older-than': {
      type: 'string',
      value: 'age',
      help: 'done messages finished longer ago than this: 30d, 12h, 90m, 3600s',
    },
    'dead-older-than': {
      type: 'string',
      value: 'age',
      help: 'dead messages (they leave the DLQ and cannot be redriven)',
    },
    'dry-run': { type: 'boolean', help: 'count what would go, change nothing' },
    vacuum: {
      type: 'boolean',
      help: 'SQLite: VACUUM afterwards to shrink the file (locks it for the duration)',
    },
    chunk: {
      type: 'string',
      value: 'N',
      help: 'rows per write transaction (default 500, at most 5000)',
    },
    'duty-cycle': {
      type: 'string',
      value: 'D',
      help: `share of the time prune keeps the store busy, 0.01 to 1 (default ${DEFAULT_PRUNE_DUTY_CYCLE}: workers run on; 1: flat out, for an idle store)`,
    },
  },
  examples: [
    'prune --done-older-than 30d --dry-run',
    'prune --done-older-than 30d --dead-older-than 90d',
  ],
  opensStore: true,
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'prune');
    const done = stringFlag(values, 'done-older-than');
    const dead = stringFlag(values, 'dead-older-than');
    if (done === undefined && dead === undefined) {
      throw new UsageError(
        'prune needs --done-older-than or --dead-older-than (ready and leased messages are never pruned)',
      );
    }
    const args: PruneArgs = {
      dryRun: boolFlag(values, 'dry-run') === true,
      vacuum: boolFlag(values, 'vacuum') === true,
    };
    if (done !== undefined) args.doneOlderThanSeconds = parseDuration(done, '--done-older-than');
    if (dead !== undefined) args.deadOlderThanSeconds = parseDuration(dead, '--dead-older-than');
    const chunk = intFlag(values, 'chunk', { min: 1, max: 5000 });
    if (chunk !== undefined) args.chunkSize = chunk;
    const dutyCycle = fractionFlag(values, 'duty-cycle', { min: 0.01, max: 1 });
    if (dutyCycle !== undefined) args.dutyCycle = dutyCycle;
    if (args.dryRun && args.vacuum) throw new UsageError('--vacuum does nothing with --dry-run');
    return args;
  },
  async run(args, { store, json, ctx }) {
    const result = await prune(store, {
      ...args,
      onChunk: ({ state, pruned }) => ctx.progress?.update(`pruned ${pruned} ${state} messages`),
    });
    ctx.progress?.done();
    ctx.out(json ? toJson(pruneJson(result)) : describe(result));
    return 0;
  },
});

function pruneJson(r: PruneResult) {
  return {
    dry_run: r.dryRun,
    done: r.done,
    dead: r.dead,
    done_before: r.doneBefore,
    dead_before: r.deadBefore,
    vacuumed: r.vacuumed,
    duty_cycle: r.dutyCycle,
  };
}

function describe(r: PruneResult): string {
  const parts: string[] = [];
  if (r.doneBefore !== null) parts.push(`${r.done} done (finished before ${r.doneBefore})`);
  if (r.deadBefore !== null) parts.push(`${r.dead} dead (died before ${r.deadBefore})`);
  const verb = r.dryRun ? 'would prune' : 'pruned';
  const tail = r.dryRun
    ? '; nothing changed'
    : `; ids, final states and payload hashes kept, effects untouched${r.vacuumed ? ', file vacuumed' : ''}`;
  return `${verb} ${parts.join(', ')}${tail}`;
}
