import type { Store } from './backend/backend.ts';
import { applyMany } from './protocol/apply.ts';
import { claimMany } from './protocol/claim.ts';
import { runSyncHandler } from './protocol/handler-result.ts';
import { settleOne } from './protocol/settle-one.ts';
import type { ApplyOutcome, Handler, HandlerContext, Lease } from './types.ts';
import { workPipelined } from './worker-pipeline.ts';

/**
 * Messages per claim and per apply transaction when the caller does not say. 100 was
 * chosen from `bun run bench`: on SQLite with synchronous=FULL it gave ~22,500 msg/s
 * (21x per-message mode) with p99 claim-to-ACK of ~9 ms; 200 added 9-33 % but p99
 * went to ~35 ms; 500 was no faster. Every message is still fenced on its own.
 */
export const DEFAULT_BATCH = 100;

/** How long after waiting for the SQLite write lock a worker keeps stepping aside, ms. */
const CONTENTION_WINDOW_MS = 200;
/** Within that window, a worker that did not wait steps aside at most this often, ms. */
const STEP_ASIDE_EVERY_MS = 10;

export interface WorkOptions {
  /** Stop after this many messages were claimed. Default: no limit. */
  max?: number;
  /** Messages per claim and per apply transaction. Default {@link DEFAULT_BATCH}. */
  batch?: number;
  /** Lease length in seconds. Default: the store's (30). */
  leaseSeconds?: number;
  /** Called after every apply transaction, for progress output. */
  onProgress?: (summary: Readonly<WorkSummary>) => void;
}

export interface WorkSummary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Leases found lost at apply (another claim or an expiry got there first). */
  lost: number;
}

/**
 * The worker loop: claim → handler → apply (effect + ACK in one transaction), or record
 * the failure, until nothing is claimable now or `max` messages were claimed. A claim
 * that returned one message is recorded by {@link settleOne}: the handler on the payload
 * the claim read under this generation, then one fenced write (effect + ACK, or the
 * failure), no fence read in front. A handler
 * that throws something unexpected is a temporary failure (see {@link applyMany}); it
 * never ends the loop. A lost lease is counted and skipped.
 */
export async function work(
  store: Store,
  handler: Handler,
  options: WorkOptions = {},
): Promise<WorkSummary> {
  // Batches on PostgreSQL: claim ahead and settle without a fence read (worker-pipeline.ts).
  if ((options.batch ?? DEFAULT_BATCH) > 1 && store.statements.ackManyAlone !== undefined) {
    return workPipelined(store, handler, { ...options, batch: options.batch ?? DEFAULT_BATCH });
  }
  const summary: WorkSummary = { claimed: 0, done: 0, retried: 0, dead: 0, lost: 0 };
  const batch = options.batch ?? DEFAULT_BATCH;
  const max = options.max ?? Number.POSITIVE_INFINITY;
  let contendedAt = Number.NEGATIVE_INFINITY;
  let steppedAsideAt = Number.NEGATIVE_INFINITY;
  while (summary.claimed < max) {
    const busyBefore = store.busyRetries();
    const limit = Math.min(batch, max - summary.claimed);
    const leases = await claimMany(store, {
      limit,
      ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
    });
    if (leases.length === 0) break;
    summary.claimed += leases.length;
    const [only] = leases;
    // One message: its handler on the payload our claim just read, then one fenced write
    // (settleOne); on PostgreSQL two round trips a message instead of five.
    const { outcomes, lost } =
      leases.length === 1 && only !== undefined
        ? await settleOne(store, only, runSyncHandler(handler, only.payload, contextOf(only)))
        : await applyMany(store, leases, handler);
    summary.lost += lost.length;
    for (const outcome of outcomes) count(summary, outcome);
    options.onProgress?.(summary);
    // Another process wants the SQLite write lock: step aside briefly so it gets a turn
    // instead of being starved by our back-to-back transactions. After a batch in which
    // we waited for the lock, always; for a while after that, at most every
    // STEP_ASIDE_EVERY_MS too, since the other process may be waiting now without our
    // seeing it (the one holding the lock never waits).
    const now = performance.now();
    const waited = store.busyRetries() > busyBefore;
    if (waited) contendedAt = now;
    const recently = now - contendedAt < CONTENTION_WINDOW_MS;
    if (waited || (recently && now - steppedAsideAt >= STEP_ASIDE_EVERY_MS)) {
      steppedAsideAt = now;
      await Bun.sleep(1 + Math.random() * 2);
    }
  }
  return summary;
}

function contextOf(lease: Lease): HandlerContext {
  return { eventId: lease.eventId, generation: lease.generation, attempt: lease.attempt };
}

function count(summary: WorkSummary, outcome: ApplyOutcome): void {
  if (outcome.outcome === 'done') summary.done++;
  else if (outcome.outcome === 'retry') summary.retried++;
  else summary.dead++;
}
