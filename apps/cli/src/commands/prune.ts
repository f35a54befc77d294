import { DEFAULT_PRUNE_DUTY_CYCLE, type PruneResult, prune } from '@onceq/core/admin';
import { checkDedupWindow } from '@onceq/core/internal';
import {
  boolFlag,
  expectPositionals,
  fractionFlag,
  intFlag,
  queueFlag,
  stringFlag,
} from '../args.ts';
import { defineCommand } from '../command.ts';
import { parseDuration } from '../duration.ts';
import { UsageError } from '../errors.ts';
import { humanTime, plural, toJson } from '../output.ts';

interface PruneArgs {
  queue?: string;
  doneOlderThanSeconds?: number;
  deadOlderThanSeconds?: number;
  forgetOlderThanSeconds?: number;
  force: boolean;
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
    'forget-older-than': {
      type: 'string',
      value: 'age',
      help: 'the dedup window: delete tombstones of messages finished longer ago (at least 3d); their repeats are no longer recognised',
    },
    queue: {
      type: 'string',
      value: 'NAME',
      help: "only messages of this queue (not with --forget-older-than: the dedup window is the store's)",
    },
    force: { type: 'boolean', help: 'allow --forget-older-than below 3d' },
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
    'prune --done-older-than 30d --forget-older-than 90d',
    'prune --queue payments --done-older-than 7d',
  ],
  opensStore: true,
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'prune');
    const done = stringFlag(values, 'done-older-than');
    const dead = stringFlag(values, 'dead-older-than');
    const forget = stringFlag(values, 'forget-older-than');
    if (done === undefined && dead === undefined && forget === undefined) {
      throw new UsageError(
        'prune needs --done-older-than, --dead-older-than or --forget-older-than (ready and leased messages are never pruned)',
      );
    }
    const args: PruneArgs = {
      force: boolFlag(values, 'force') === true,
      dryRun: boolFlag(values, 'dry-run') === true,
      vacuum: boolFlag(values, 'vacuum') === true,
    };
    const queue = queueFlag(values);
    if (queue !== undefined) {
      if (forget !== undefined) {
        throw new UsageError(
          '--forget-older-than applies to the whole store (an event id is unique in the store, whatever its queue): give it without --queue',
        );
      }
      args.queue = queue;
    }
    if (done !== undefined) args.doneOlderThanSeconds = parseDuration(done, '--done-older-than');
    if (dead !== undefined) args.deadOlderThanSeconds = parseDuration(dead, '--dead-older-than');
    if (forget !== undefined) {
      const seconds = parseDuration(forget, '--forget-older-than');
      checkDedupWindow(seconds, args.force, forget);
      args.forgetOlderThanSeconds = seconds;
    } else if (args.force) {
      throw new UsageError('--force only applies to --forget-older-than');
    }
    const chunk = intFlag(values, 'chunk', { min: 1, max: 5000 });
    if (chunk !== undefined) args.chunkSize = chunk;
    const dutyCycle = fractionFlag(values, 'duty-cycle', { min: 0.01, max: 1 });
    if (dutyCycle !== undefined) args.dutyCycle = dutyCycle;
    if (args.dryRun && args.vacuum) throw new UsageError('--vacuum does nothing with --dry-run');
    return args;
  },
  async run(args, { store, json, ctx, clock }) {
    const result = await prune(store, {
      ...args,
      onChunk: ({ state, pruned, forgotten }) =>
        ctx.progress?.update(`${forgotten ? 'forgot' : 'pruned'} ${pruned} ${state} messages`),
    });
    ctx.progress?.done();
    ctx.out(json ? toJson(pruneJson(result, args.queue)) : describe(result, clock(), args.queue));
    return 0;
  },
});

function pruneJson(r: PruneResult, queue: string | undefined) {
  return {
    ...(queue === undefined ? {} : { queue }),
    dry_run: r.dryRun,
    done: r.done,
    dead: r.dead,
    done_before: r.doneBefore,
    dead_before: r.deadBefore,
    forgotten: r.forgotten,
    forgotten_before: r.forgottenBefore,
    pages_released: r.pagesReleased,
    vacuumed: r.vacuumed,
    duty_cycle: r.dutyCycle,
  };
}

/** For people: the cut-off times in local time, like every other time the CLI prints. */
function describe(r: PruneResult, now: number, queue: string | undefined): string {
  const parts: string[] = [];
  if (r.doneBefore !== null)
    parts.push(`${r.done} done (finished before ${humanTime(r.doneBefore, now)})`);
  if (r.deadBefore !== null)
    parts.push(`${r.dead} dead (died before ${humanTime(r.deadBefore, now)})`);
  const lines: string[] = [];
  if (parts.length > 0) {
    const verb = r.dryRun ? 'would prune' : 'pruned';
    const tail = r.dryRun
      ? '; nothing changed'
      : '; ids, final states and payload hashes kept, effects untouched';
    const of = queue === undefined ? '' : ` of queue ${queue}`;
    lines.push(`${verb} ${parts.join(', ')}${of}${tail}`);
  }
  if (r.forgottenBefore !== null) {
    const when = humanTime(r.forgottenBefore, now);
    lines.push(
      r.dryRun
        ? `would forget ${r.forgotten} tombstones (finished before ${when}); nothing changed`
        : `forgot ${r.forgotten} tombstones (finished before ${when}) with their effects; repeats of events finished before then are no longer recognised`,
    );
  }
  if (r.vacuumed) lines.push('file vacuumed');
  if (r.pagesReleased > 0)
    lines.push(`${plural(r.pagesReleased, 'free page')} given back to the file system`);
  return lines.join('\n');
}
