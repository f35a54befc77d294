import { type Store, Worker, work } from '@onceq/core';
import {
  DEFAULT_BATCH,
  type WaitingReport,
  type WorkSummary,
  waitingReport,
} from '@onceq/core/internal';
import { expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import {
  choiceSource,
  chooseHandler,
  describeChoice,
  HANDLER_FLAG_HELP,
  type HandlerChoice,
} from '../handler-choice.ts';
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
  examples: ['work', 'work --handler v2 --max 10', 'work --handler ./examples/handler/tips.ts'],
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
    const summary: WorkSummary = { claimed: 0, done: 0, retried: 0, dead: 0, lost: 0 };
    // Ctrl-C is handled between chunks of work (the listener runs when the event loop
    // turns, which a run of SQLite transactions never lets it do): no transaction is
    // open then, so the summary so far is exact and nothing is half done.
    const stopListening = ctx.onInterrupt?.(() => {
      progress?.done();
      ctx.err(
        `onceq: interrupted: ${summary.claimed === 0 ? 'nothing was claimed' : `so far ${describe(summary)}`}; stopped between transactions, nothing is half done`,
      );
    });
    // Which rules decide the money, and why: a handler chosen in setup changes results.
    // Said after the Ctrl-C listener is in place, so an interrupt right after it is answered.
    if (!json) ctx.err(describeChoice(args.handler));
    try {
      progress?.update(`working with handler ${name}…`);
      await drain(store, args, summary, (s) =>
        progress?.update(`working with handler ${name}… ${describe(s)}`),
      );
      stopListening?.();
    } finally {
      progress?.done();
    }
    const waiting = await waitingReport(store, store.clock());
    if (json)
      ctx.out(
        toJson({
          handler: name,
          handler_source: choiceSource(args.handler),
          ...summary,
          waiting: waitingJson(waiting),
        }),
      );
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
 * Built-in handlers run inside the apply transaction ({@link work}), in chunks of
 * {@link WORK_CHUNK_BATCHES} batches so a Ctrl-C is answered between two of them; a
 * handler module may be async, so it runs through the service worker in drain mode:
 * outside the transaction, then a fenced ACK at the same generation. Adds to `summary`.
 */
async function drain(
  store: Store,
  args: WorkArgs,
  summary: WorkSummary,
  onProgress: (s: WorkSummary) => void,
): Promise<void> {
  const options = {
    ...(args.batch === undefined ? {} : { batch: args.batch }),
    ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
  };
  if (args.handler.kind === 'module') {
    const max = args.max === undefined ? {} : { max: args.max };
    const worker = new Worker(store, args.handler.handler, { ...options, ...max, drain: true });
    await worker.start();
    const { claimed, done, retried, dead, lost } = await worker.finished();
    Object.assign(summary, { claimed, done, retried, dead, lost });
    return;
  }
  const chunk = (args.batch ?? DEFAULT_BATCH) * WORK_CHUNK_BATCHES;
  for (;;) {
    const left = args.max === undefined ? chunk : Math.min(chunk, args.max - summary.claimed);
    const part = await work(store, args.handler.handler, {
      ...options,
      max: left,
      onProgress: (s) => onProgress(add(summary, s)),
    });
    Object.assign(summary, add(summary, part));
    // Fewer than asked: nothing is claimable now. Or the --max is reached.
    if (part.claimed < left || summary.claimed === args.max) break;
    await new Promise((resolve) => setTimeout(resolve, 0)); // let a Ctrl-C in
  }
}

/** Messages per call of core's work loop: Ctrl-C is answered between two calls. */
const WORK_CHUNK_BATCHES = 5;

function add(a: WorkSummary, b: Readonly<WorkSummary>): WorkSummary {
  return {
    claimed: a.claimed + b.claimed,
    done: a.done + b.done,
    retried: a.retried + b.retried,
    dead: a.dead + b.dead,
    lost: a.lost + b.lost,
  };
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
