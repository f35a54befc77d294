import type { Store } from '../driver/backend.ts';
import type { Handler } from '../handler/contract.ts';
import { backoffOf, ON_DEAD, type PolicyOptions } from '../policy.ts';
import type { ExtendedLease } from '../queue/extend.ts';
import { DEFAULT_QUEUE, isQueueName, QUEUE_NAME_RULE } from '../queues.ts';
import type { WorkerLog } from './log.ts';
import type { MetricsRecorder } from './metrics-recorder.ts';
import type { PruneSchedule } from './prune-schedule.ts';

/**
 * Messages per claim and per record when the caller does not say. Chosen from `bun run
 * bench` (docs/benchmarks.md): larger batches add little throughput on SQLite with
 * synchronous=FULL and lengthen the time from claim to ACK. Every message is still
 * fenced on its own.
 */
export const DEFAULT_BATCH = 100;

/** `/healthz` reports a worker that holds work and settled nothing for this many leases. */
export const STUCK_AFTER_LEASES = 3;

/**
 * One queue of a worker given as a record (`WorkerOptions.queues`): its handler and its
 * policy, each part not given taken from the worker's own (the `Worker`'s handler, the
 * top-level attempts, backoff, lease and on dead), then from the store's.
 */
export interface WorkerQueueOptions extends PolicyOptions {
  /** The handler of this queue's messages. Default: the worker's handler. */
  handler?: Handler;
}

/**
 * A worker's options; its policy ({@link PolicyOptions}: attempts, backoff, lease, on
 * dead) is the rule for every message it claims and records (docs/worker.md, "Policy"),
 * except where a queue of {@link WorkerOptions.queues} sets its own.
 */
export interface WorkerOptions extends PolicyOptions {
  /**
   * The queues this worker claims from, in turn: one claim per queue, the next claim from
   * the next queue, an empty queue passed over. Either their names (every queue runs the
   * worker's handler and policy), or a record from name to {@link WorkerQueueOptions}: a
   * handler and policy per queue, e.g. `{ payments: { handler: pay, attempts: 10 },
   * refunds: {} }`. Each message is handled by its queue's handler and recorded
   * (retried, dead) by its queue's policy. Default `['default']`.
   */
  queues?: readonly string[] | Readonly<Record<string, WorkerQueueOptions>>;
  /** Messages per claim (and per record transaction). Default {@link DEFAULT_BATCH} (100). */
  batch?: number;
  /** Handlers running at once (each message still fenced on its own). Default 1. */
  concurrency?: number;
  /**
   * Claim the next batch while this one is handled and the previous one recorded, so the
   * client and the server work at the same time (the pipelined completer). Only where
   * the backend takes concurrent claimers (PostgreSQL's `SKIP LOCKED`); ignored on
   * SQLite, whose one write lock serializes them anyway. Default true.
   */
  claimAhead?: boolean;
  /** Stop once nothing is claimable now (`onceq work`). Default false: run until stopped. */
  drain?: boolean;
  /** Stop after this many claimed messages. Default: no limit. */
  max?: number;
  /**
   * A handler's deadline, ms: past it its `signal` is aborted and the message gets a
   * temporary failure `handler_timeout` (retried after backoff, dead on the last
   * attempt). Default: none.
   */
  handlerTimeoutMs?: number;
  /** Longest idle poll, ms. Default 1000, or 5000 where the store has LISTEN/NOTIFY. */
  pollMaxMs?: number;
  /** Where the worker's lines go. Default: nowhere. */
  log?: WorkerLog;
  /** Counters and histograms to feed. Default: none. */
  metrics?: MetricsRecorder;
  /** Prune on a schedule, in the background between claims (`ScheduledPrune`). Default: never. */
  prune?: PruneSchedule;
  /** Called after every recorded batch with the running counts (progress output). */
  onProgress?: (summary: Readonly<WorkerSummary>) => void;
}

export interface WorkerSummary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Leases found lost (refused heartbeat or refused ACK): nothing of them was written. */
  lost: number;
  /** Claimed but unstarted messages given back at a stop, attempts not spent. */
  released: number;
  /** Successful lease extensions. */
  extended: number;
}

export interface StopOptions {
  /** How long in-flight handlers may take to finish, ms. Default 30000. */
  timeoutMs?: number;
}

/** How a worker ended. */
export interface StopResult {
  /** False when the timeout ran out or `Worker.forceStop` was called. */
  graceful: boolean;
  /** Messages whose handlers were abandoned: their leases expire and are recovered (a silent death). */
  abandoned: number;
  /** Those leases, each valid until its `leaseUntil` as last extended. */
  abandonedLeases: readonly ExtendedLease[];
  summary: WorkerSummary;
}

/** One queue as a worker runs it: its name, the store under its policy, its handler. */
export interface WorkerQueue {
  readonly name: string;
  /** The worker's store with this queue's policy as its protocol ({@link withPolicy}). */
  readonly store: Store;
  readonly handler: Handler;
}

/** A worker's options as it runs with them: every default applied, every number checked. */
export interface WorkerSettings {
  /** The queues in claim turn, each with its store (policy) and handler. */
  readonly queues: readonly WorkerQueue[];
  readonly batch: number;
  /** The longest lease of its queues (how long `/healthz` waits before it says stuck). */
  readonly leaseSeconds: number;
  readonly concurrency: number;
  readonly max: number;
  readonly timeoutMs: number | undefined;
  readonly drain: boolean;
}

/**
 * `options` with their defaults, for a worker on `store` with `handler`; throws a
 * RangeError naming a setting that is invalid (a queue's setting names its queue).
 */
export function workerSettings(
  store: Store,
  handler: Handler,
  options: WorkerOptions,
): WorkerSettings {
  const { handlerTimeoutMs } = options;
  // Every queue's policy starts from the worker's.
  const base = withPolicy(store, options, 'worker');
  const queues = queueEntries(options.queues).map(([name, own]): WorkerQueue => {
    if (own.handler !== undefined && typeof own.handler !== 'function') {
      throw new RangeError(`worker queue ${name}: handler must be a function`);
    }
    return {
      name,
      store: withPolicy(base, own, `worker queue ${name}`),
      handler: own.handler ?? handler,
    };
  });
  return {
    queues,
    batch: positive(options.batch ?? DEFAULT_BATCH, 'batch'),
    leaseSeconds: Math.max(...queues.map((q) => q.store.protocol.leaseSeconds)),
    concurrency: positive(options.concurrency ?? 1, 'concurrency'),
    max: options.max ?? Number.POSITIVE_INFINITY,
    timeoutMs:
      handlerTimeoutMs === undefined ? undefined : positive(handlerTimeoutMs, 'handler timeout'),
    drain: options.drain ?? false,
  };
}

/** The queues of `queues` as name and own options, checked: at least one, distinct, valid names. */
function queueEntries(queues: WorkerOptions['queues']): (readonly [string, WorkerQueueOptions])[] {
  const entries =
    queues === undefined
      ? [[DEFAULT_QUEUE, {}] as const]
      : Array.isArray(queues)
        ? (queues as readonly string[]).map((name) => [name, {}] as const)
        : Object.entries(queues as Record<string, WorkerQueueOptions>);
  const names = entries.map(([name]) => name);
  const bad = names.find((q) => !isQueueName(q));
  if (names.length === 0 || bad !== undefined || new Set(names).size !== names.length) {
    throw new RangeError(
      `worker queues must be distinct names, each ${QUEUE_NAME_RULE}, got ${JSON.stringify(names)}`,
    );
  }
  for (const [name, own] of entries) {
    if (typeof own !== 'object' || own === null) {
      throw new RangeError(`worker queue ${name} must map to an object of options`);
    }
  }
  return entries;
}

/**
 * `store` as a worker with `options` sees it: its protocol is the worker's policy (each
 * part given replaces the store's). Throws a RangeError naming a part that is invalid,
 * said of `who` (the worker, or one of its queues).
 */
export function withPolicy(store: Store, options: PolicyOptions, who = 'worker'): Store {
  const { attempts, backoff, leaseSeconds, onDead } = options;
  if (
    attempts === undefined &&
    backoff === undefined &&
    leaseSeconds === undefined &&
    onDead === undefined
  ) {
    return store;
  }
  if (onDead !== undefined && !(ON_DEAD as readonly string[]).includes(onDead)) {
    throw new RangeError(`${who} onDead must be block or skip, got ${JSON.stringify(onDead)}`);
  }
  const protocol = {
    ...store.protocol,
    ...(attempts === undefined ? {} : { maxAttempts: positive(attempts, 'attempts', who) }),
    ...(backoff === undefined ? {} : { backoffSeconds: backoffOf(backoff) }),
    ...(leaseSeconds === undefined ? {} : { leaseSeconds: positive(leaseSeconds, 'lease', who) }),
    ...(onDead === undefined ? {} : { onDead }),
  };
  return { ...store, protocol };
}

function positive(n: number, name: string, who = 'worker'): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`${who} ${name} must be a positive whole number, got ${n}`);
  }
  return n;
}
