import type { Store } from '../driver/backend.ts';
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
 * A worker's options; its policy ({@link PolicyOptions}: attempts, backoff, lease, on
 * dead) is the rule for every message it claims and records (docs/worker.md, "Policy").
 */
export interface WorkerOptions extends PolicyOptions {
  /**
   * The queues this worker claims from, in turn: one claim per queue, the next claim from
   * the next queue, an empty queue passed over. Default `['default']`.
   */
  queues?: readonly string[];
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

/** A worker's options as it runs with them: every default applied, every number checked. */
export interface WorkerSettings {
  readonly queues: readonly string[];
  readonly batch: number;
  readonly leaseSeconds: number;
  readonly concurrency: number;
  readonly max: number;
  readonly timeoutMs: number | undefined;
  readonly drain: boolean;
}

/** `options` with their defaults; throws a RangeError naming a setting that is not a positive whole number. */
export function workerSettings(options: WorkerOptions, storeLeaseSeconds: number): WorkerSettings {
  const { handlerTimeoutMs } = options;
  const queues = options.queues ?? [DEFAULT_QUEUE];
  const bad = queues.find((q) => !isQueueName(q));
  if (queues.length === 0 || bad !== undefined || new Set(queues).size !== queues.length) {
    throw new RangeError(
      `worker queues must be distinct names, each ${QUEUE_NAME_RULE}, got ${JSON.stringify(queues)}`,
    );
  }
  return {
    queues,
    batch: positive(options.batch ?? DEFAULT_BATCH, 'batch'),
    leaseSeconds: positive(options.leaseSeconds ?? storeLeaseSeconds, 'lease'),
    concurrency: positive(options.concurrency ?? 1, 'concurrency'),
    max: options.max ?? Number.POSITIVE_INFINITY,
    timeoutMs:
      handlerTimeoutMs === undefined ? undefined : positive(handlerTimeoutMs, 'handler timeout'),
    drain: options.drain ?? false,
  };
}

/**
 * `store` as a worker with `options` sees it: its protocol is the worker's policy (each
 * part given replaces the store's). Throws a RangeError naming a part that is invalid.
 */
export function withPolicy(store: Store, options: PolicyOptions): Store {
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
    throw new RangeError(`worker onDead must be block or skip, got ${JSON.stringify(onDead)}`);
  }
  const protocol = {
    ...store.protocol,
    ...(attempts === undefined ? {} : { maxAttempts: positive(attempts, 'attempts') }),
    ...(backoff === undefined ? {} : { backoffSeconds: backoffOf(backoff) }),
    ...(leaseSeconds === undefined ? {} : { leaseSeconds: positive(leaseSeconds, 'lease') }),
    ...(onDead === undefined ? {} : { onDead }),
  };
  return { ...store, protocol };
}

function positive(n: number, name: string): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`worker ${name} must be a positive whole number, got ${n}`);
  }
  return n;
}
