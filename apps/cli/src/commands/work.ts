import type { StopResult, WorkerSummary } from '@onceq/core';
import { Worker } from '@onceq/core';
import { type WaitingReport, waitingReport } from '@onceq/core/admin';
import { DEFAULT_BATCH } from '@onceq/core/internal';
import { type SignalStop, silentLog, stopOnSignals } from '@onceq/core/service';
import { expectPositionals, intFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import {
  chooseQueueHandlers,
  describeChoices,
  HANDLER_FLAG,
  handlerJson,
  handlerNames,
  type QueueRun,
  workerQueues,
} from '../handler-choice.ts';
import { plural, toJson } from '../output.ts';
import { POLICY_FLAGS, QUEUE_FLAG, queuesFlag, queuesPlan } from '../policy.ts';
import {
  CONCURRENCY_FLAG,
  DEFAULT_SHUTDOWN_TIMEOUT,
  HANDLER_TIMEOUT_FLAG,
  handlerTimeoutMs,
} from './worker.ts';

interface WorkArgs {
  /** Each queue's handler and policy. */
  queues: QueueRun[];
  max: number | undefined;
  batch: number | undefined;
  concurrency: number;
  handlerTimeout: number | undefined;
}

export const workCommand = defineCommand<WorkArgs>({
  name: 'work',
  summary: 'claim → handle → apply until nothing is claimable now (or N messages)',
  flags: {
    handler: HANDLER_FLAG,
    queue: QUEUE_FLAG,
    max: { type: 'string', value: 'N', help: 'stop after N claimed messages' },
    ...POLICY_FLAGS,
    batch: {
      type: 'string',
      value: 'N',
      help: `messages per claim and apply transaction (default ${DEFAULT_BATCH}; 1 = per message)`,
    },
    concurrency: CONCURRENCY_FLAG,
    'handler-timeout': HANDLER_TIMEOUT_FLAG,
  },
  opensStore: true,
  examples: [
    'work',
    'work --handler v2 --max 10',
    'work --attempts 10 --backoff exp:1s..10m',
    'work --handler ./my-handler.ts',
  ],
  async parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'work');
    const plans = queuesPlan(queuesFlag(values), values, config);
    return {
      max: intFlag(values, 'max', { min: 1 }),
      queues: await chooseQueueHandlers(plans, config, ctx.cwd),
      batch: intFlag(values, 'batch', { min: 1 }),
      concurrency: intFlag(values, 'concurrency', { min: 1, max: 1000 }) ?? 1,
      handlerTimeout: intFlag(values, 'handler-timeout', { min: 1, max: 86_400 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const progress = ctx.progress;
    const name = handlerNames(args.queues);
    // The worker loop in drain mode: the same loop as `onceq worker`, ending once nothing
    // is claimable now (or at --max).
    const { handler, queues } = workerQueues(args.queues);
    const worker = new Worker(store, handler, {
      drain: true,
      concurrency: args.concurrency,
      ...(args.batch === undefined ? {} : { batch: args.batch }),
      queues,
      ...(args.max === undefined ? {} : { max: args.max }),
      ...handlerTimeoutMs(args.handlerTimeout),
      onProgress: (s) => progress?.update(`working with handler ${name}… ${describe(s)}`),
    });
    // Ctrl-C (or SIGTERM): no new claims, running handlers finish and are recorded,
    // claimed but unstarted messages are released; a second one stops at once (core's
    // two-stage shutdown). The listener runs between transactions (the loop lets the
    // event loop turn there), so nothing is half done.
    const ended = stopOnSignals(worker, {
      timeoutMs: DEFAULT_SHUTDOWN_TIMEOUT * 1000,
      log: silentLog,
      onSignal: (signal, stage) => {
        if (stage !== 'stopping') return;
        progress?.done();
        const key = signal === 'SIGINT' ? 'Ctrl-C' : signal;
        ctx.err(
          `onceq: ${key}: stopping; no new claims, running handlers finish, unstarted claims are released (${key} again to stop at once)`,
        );
      },
    });
    // Which rules decide the money, and why: a handler chosen in setup changes results.
    // Said after the signal listener is in place, so an interrupt right after it is answered.
    if (!json) ctx.err(describeChoices(args.queues));
    let result: SignalStop;
    try {
      progress?.update(`working with handler ${name}…`);
      await worker.start();
      result = await ended;
    } finally {
      progress?.done();
    }
    const { summary } = result;
    const stopped = result.signal === null ? undefined : result;
    if (stopped !== undefined) ctx.err(`onceq: interrupted: ${describeStop(stopped)}`);
    const waiting = await waitingReport(store, store.clock());
    if (json)
      ctx.out(
        toJson({
          ...handlerJson(args.queues),
          ...workSummary(summary),
          waiting: waitingJson(waiting),
          ...(stopped === undefined ? {} : interruptedJson(stopped)),
        }),
      );
    else {
      ctx.out(
        summary.claimed === 0 ? 'nothing to claim now' : `handler ${name}: ${describe(summary)}`,
      );
      const why = describeWaiting(waiting, store.clock());
      if (why !== null) ctx.out(why);
    }
    return stopped === undefined ? 0 : 130;
  },
});

/** What an interrupted `work` did and left: released claims, leases still held and until when. */
function describeStop(result: StopResult): string {
  const parts = [
    `${result.summary.claimed === 0 ? 'nothing was claimed' : `so far ${describe(result.summary)}`}; stopped between transactions, nothing is half done`,
  ];
  const { released } = result.summary;
  if (released > 0) {
    parts.push(
      `${plural(released, 'claimed but unstarted message')} released (ready now, attempt${released === 1 ? '' : 's'} given back)`,
    );
  }
  if (result.abandonedLeases.length > 0) {
    const leases = result.abandonedLeases.map(
      (l) => `${l.eventId} until ${clockTime(l.leaseUntil)}`,
    );
    parts.push(
      `still leased, its handler abandoned: ${leases.join(', ')} (the attempt is spent; a claim after that recovers it)`,
    );
  }
  return parts.join('; ');
}

function interruptedJson(result: StopResult) {
  return {
    interrupted: true,
    released: result.summary.released,
    abandoned: result.abandonedLeases.map((l) => ({
      event_id: l.eventId,
      generation: l.generation,
      lease_until: l.leaseUntil,
    })),
  };
}

function workSummary(s: WorkerSummary) {
  return { claimed: s.claimed, done: s.done, retried: s.retried, dead: s.dead, lost: s.lost };
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

function describe(s: WorkerSummary): string {
  const parts = [`${s.done} done`, `${s.retried} retried`, `${s.dead} dead`];
  if (s.lost > 0) parts.push(`${s.lost} lost`);
  return `claimed ${plural(s.claimed, 'message')}: ${parts.join(', ')}`;
}
