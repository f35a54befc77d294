import type { Store } from '../driver/backend.ts';
import type { Handler } from '../handler/contract.ts';
import { complete } from '../queue/complete.ts';
import type { Lease } from '../types.ts';
import { claimer, countOutcome, runAll, workPipelined } from './pipeline.ts';

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
 * the failure, until nothing is claimable now or `max` messages were claimed. The
 * handlers run on the payloads the claim read under this generation, outside any
 * transaction; {@link complete} then records every result in one fenced write, no
 * fence read in front. At batch 1 on PostgreSQL the claim of the next
 * message runs while the current one is settled ({@link prefetchesClaims}); never past
 * `max`, and a prefetched lease left behind by an error or a crash is recovered like any
 * abandoned claim. A handler that throws something unexpected is a temporary failure
 * (see {@link complete}); it never ends the loop. A lost lease is counted and skipped.
 */
export async function work(
  store: Store,
  handler: Handler,
  options: WorkOptions = {},
): Promise<WorkSummary> {
  // Batches on PostgreSQL: claim ahead and settle without a fence read (worker-pipeline.ts).
  if ((options.batch ?? DEFAULT_BATCH) > 1 && store.capabilities.skipLocked) {
    return workPipelined(store, handler, { ...options, batch: options.batch ?? DEFAULT_BATCH });
  }
  const summary: WorkSummary = { claimed: 0, done: 0, retried: 0, dead: 0, lost: 0 };
  const batch = options.batch ?? DEFAULT_BATCH;
  const max = options.max ?? Number.POSITIVE_INFINITY;
  let contendedAt = Number.NEGATIVE_INFINITY;
  let steppedAsideAt = Number.NEGATIVE_INFINITY;
  const claimUpTo = claimer(store, options);
  // At batch 1 on a backend with concurrent claimers, the next claim runs while this
  // message is settled (see prefetchesClaims): null when there is none in flight.
  const prefetch = prefetchesClaims(store, batch);
  let next: Promise<Lease[]> | null = null;
  while (summary.claimed < max) {
    const busyBefore = store.busyRetries();
    const leases = await (next ?? claimUpTo(Math.min(batch, max - summary.claimed)));
    next = null;
    if (leases.length === 0) break;
    summary.claimed += leases.length;
    if (prefetch && summary.claimed < max) next = claimUpTo(1);
    // The handlers on the payloads our claim just read, then one fenced write of all
    // results (complete); on PostgreSQL two round trips a message instead of five.
    const { outcomes, lost } = await settleOrAbandon(
      next,
      runAll(handler, leases).then((results) => complete(store, results)),
    );
    summary.lost += lost.length;
    for (const outcome of outcomes) countOutcome(summary, outcome);
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

/**
 * Whether `work` claims the next message while it settles the current one. Only at
 * batch 1, where a message is two round trips (claim, settle) and the worker would
 * otherwise leave the server idle while it runs the handler and the database idle while
 * it waits: overlapped, the settle of message n and the claim of n+1 run at the same
 * time on two pooled connections. Only where concurrent claimers are safe by
 * construction (`skipLocked`: PostgreSQL), since the prefetching claim is just another
 * claimer: it skips the row being settled (still leased, locked by the settle), keeps
 * claim order among the rest, and spends an attempt like any claim. The price: two
 * statements in flight cost the server more CPU a message than two in a row (+28 % in
 * VALIDATION.md, "The overlap on its own"), so it pays while a core would sit idle.
 */
function prefetchesClaims(store: Store, batch: number): boolean {
  return batch === 1 && store.capabilities.skipLocked;
}

/**
 * Awaits `settle`; if it throws while a prefetched claim is in flight, that claim is
 * left to finish on its own (its failure swallowed, so it is never an unhandled
 * rejection) and the settle's error is what the caller sees. A prefetched lease that
 * the loop never gets to (this error, a crash, or the end of the loop) is an ordinary
 * claimed-and-abandoned message: its attempt is spent and the next claim after its
 * `lease_until` recovers it (§5 lazy recovery), exactly as if the process died after
 * claiming it.
 */
async function settleOrAbandon<T>(next: Promise<unknown> | null, settle: Promise<T>): Promise<T> {
  try {
    return await settle;
  } catch (error) {
    next?.catch(() => {});
    throw error;
  }
}
