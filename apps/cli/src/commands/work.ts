import {
  DEFAULT_BATCH,
  type Store,
  type WaitingReport,
  Worker,
  type WorkSummary,
  waitingReport,
  work,
} from '@onceq/core';
import { expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { chooseHandler, HANDLER_FLAG_HELP, type HandlerChoice } from '../handler-choice.ts';
import { plural, toJson } from '../output.ts';

interface WorkArgs {
  handler: HandlerChoice;
  max: number | undefined;
  leaseSeconds: number | undefined;
  batch: number | undefined;
}

export const workCommand = defineCommand<WorkArgs>({
  name: 'work',
  summary: 'claim → handle → apply until nothing is claimable now (or N messages)',
  usage: 'work [--handler v1|v2|./file.ts] [--max N] [--lease S] [--batch N]',
  flags: [
    HANDLER_FLAG_HELP,
    ['--max <N>', 'stop after N claimed messages'],
    ['--lease <S>', 'lease length in seconds (default 30)'],
    [
      '--batch <N>',
      `messages per claim and apply transaction (default ${DEFAULT_BATCH}; 1 = per message)`,
    ],
  ],
  options: {
    handler: { type: 'string' },
    max: { type: 'string' },
    lease: { type: 'string' },
    batch: { type: 'string' },
  },
  opensStore: true,
  async parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'work');
    return {
      handler: await chooseHandler(stringFlag(values, 'handler'), config, ctx.cwd),
      max: intFlag(values, 'max', { min: 1 }),
      leaseSeconds: intFlag(values, 'lease', { min: 1 }),
      batch: intFlag(values, 'batch', { min: 1 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const progress = ctx.progress;
    const name = args.handler.name;
    let summary: WorkSummary;
    try {
      progress?.update(`working with handler ${name}…`);
      summary = await drain(store, args, (s) =>
        progress?.update(`working with handler ${name}… ${describe(s)}`),
      );
    } finally {
      progress?.done();
    }
    const waiting = await waitingReport(store, store.clock());
    if (json) ctx.out(toJson({ handler: name, ...summary, waiting: waitingJson(waiting) }));
    else {
      ctx.out(
        summary.claimed === 0 ? 'nothing to claim now' : `handler ${name}: ${describe(summary)}`,
      );
      const why = describeWaiting(waiting, store.clock());
      if (why !== null) ctx.out(why);
    }
    return 0;
  },
});

/**
 * Built-in handlers run inside the apply transaction ({@link work}); a handler module may
 * be async, so it runs through the service worker in drain mode: outside the
 * transaction, then a fenced ACK at the same generation.
 */
async function drain(
  store: Store,
  args: WorkArgs,
  onProgress: (s: WorkSummary) => void,
): Promise<WorkSummary> {
  const options = {
    ...(args.max === undefined ? {} : { max: args.max }),
    ...(args.batch === undefined ? {} : { batch: args.batch }),
    ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
  };
  if (args.handler.kind === 'builtin') {
    return work(store, args.handler.handler, { ...options, onProgress });
  }
  const worker = new Worker(store, args.handler.handler, { ...options, drain: true });
  await worker.start();
  const { claimed, done, retried, dead, lost } = await worker.finished();
  return { claimed, done, retried, dead, lost };
}

function waitingJson(w: WaitingReport) {
  return {
    in_backoff: w.inBackoff,
    next_ready_at: w.nextReadyAt,
    leased: w.leased,
    next_lease_expiry: w.nextLeaseExpiry,
  };
}

/**
 * Why nothing more is claimable, or null when nothing waits:
 * `1 message in backoff, ready at 12:04:05 (in 2 s)`.
 */
export function describeWaiting(w: WaitingReport, now: number): string | null {
  const parts: string[] = [];
  if (w.inBackoff > 0 && w.nextReadyAt !== null) {
    parts.push(
      `${plural(w.inBackoff, 'message')} in backoff, ready at ${clockTime(w.nextReadyAt)} (in ${w.nextReadyAt - now} s)`,
    );
  }
  if (w.leased > 0 && w.nextLeaseExpiry !== null) {
    const ends = w.nextLeaseExpiry - now;
    parts.push(
      ends > 0
        ? `${plural(w.leased, 'message')} leased, the first lease ends at ${clockTime(w.nextLeaseExpiry)} (in ${ends} s)`
        : `${plural(w.leased, 'message')} leased, with an expired lease the next claim recovers`,
    );
  }
  return parts.length === 0 ? null : parts.join('; ');
}

function clockTime(seconds: number): string {
  return new Date(seconds * 1000).toLocaleTimeString('en-GB', { hour12: false });
}

function describe(s: WorkSummary): string {
  const parts = [`${s.done} done`, `${s.retried} retried`, `${s.dead} dead`];
  if (s.lost > 0) parts.push(`${s.lost} lost`);
  return `claimed ${plural(s.claimed, 'message')}: ${parts.join(', ')}`;
}
