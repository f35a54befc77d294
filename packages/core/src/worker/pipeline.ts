import type { Store } from '../driver/backend.ts';
import type { Handler, HandlerContext } from '../handler/contract.ts';
import { runHandler } from '../handler/run.ts';
import { claimMany } from '../queue/claim.ts';
import { type ClaimResult, complete } from '../queue/complete.ts';
import type { ApplyOutcome, Lease } from '../types.ts';
import type { WorkOptions, WorkSummary } from './work.ts';

/**
 * {@link work}'s loop where the backend settles a batch in one statement of its own
 * (PostgreSQL: money effects and their ACKs are one statement) and takes concurrent connections: **the client and the
 * server work at the same time**. While this process runs the handlers of batch k, the
 * server runs the claim of batch k+1; while it runs the handlers of batch k+1, the
 * server writes the effects and ACKs of batch k (one connection) and claims batch k+2
 * (another). On a machine with a core for the worker and one for PostgreSQL, neither
 * waits for the other; one batch after another, each waited for the other.
 *
 * What stays as it was: every claim is §5's claim (lazy recovery, `(available_at,
 * event_id)` order, attempts and generation bumped), every write is fenced on its own
 * (complete.ts), and the handlers run in claim order.
 *
 * What changes: this process holds up to two claimed batches at once, so a batch's
 * lease starts up to one batch's handling time before its handlers run (milliseconds
 * against a 30 s lease). At most one settle is in flight, and `onProgress` still reports
 * the batches in order. The loop ends when a claim finds nothing claimable now, after
 * the last settle is recorded; when a write fails, the error is thrown once the other
 * statement in flight has finished, and a batch claimed ahead keeps its lease until it
 * runs out, then lazy recovery gives it back with the attempt spent, as after a crash.
 */
export async function workPipelined(
  store: Store,
  handler: Handler,
  options: WorkOptions & { batch: number },
): Promise<WorkSummary> {
  const summary: WorkSummary = { claimed: 0, done: 0, retried: 0, dead: 0, lost: 0 };
  const max = options.max ?? Number.POSITIVE_INFINITY;
  const claim = claimer(store, options);
  const claimUpTo = (limit: number): Promise<Lease[]> =>
    limit <= 0 ? Promise.resolve([]) : claim(limit);
  let next = quiet(claimUpTo(Math.min(options.batch, max)));
  let settling: Promise<void> = Promise.resolve();
  try {
    for (;;) {
      const leases = await next;
      if (leases.length === 0) break;
      summary.claimed += leases.length;
      // Claim ahead: the server claims the next batch while we run these handlers.
      next = quiet(claimUpTo(Math.min(options.batch, max - summary.claimed)));
      const results = await runAll(handler, leases);
      await settling;
      settling = quiet(
        complete(store, results).then(({ outcomes, lost }) => {
          summary.lost += lost.length;
          for (const outcome of outcomes) countOutcome(summary, outcome);
          options.onProgress?.(summary);
        }),
      );
    }
    await settling;
  } finally {
    // Never leave a statement running behind the caller's back (errors are thrown above).
    await Promise.allSettled([next, settling]);
  }
  return summary;
}

/**
 * Marks a promise as handled now, so its rejection (awaited later, after other work) is
 * not reported as unhandled in between; awaiting the returned promise still throws.
 */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** Claims up to `limit` messages with the loop's lease length: both loops of {@link work}. */
export function claimer(
  store: Store,
  options: Pick<WorkOptions, 'leaseSeconds'>,
): (limit: number) => Promise<Lease[]> {
  return (limit) =>
    claimMany(store, {
      limit,
      ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
    });
}

/** The handlers of `leases` in claim order, outside any transaction: both loops of {@link work}. */
export async function runAll(handler: Handler, leases: readonly Lease[]): Promise<ClaimResult[]> {
  const results: ClaimResult[] = [];
  for (const lease of leases) {
    results.push({
      lease,
      result: await runHandler(handler, lease.payload, handlerContext(lease)),
    });
  }
  return results;
}

/** What a handler is told about the message it runs on. */
export function handlerContext(lease: Lease): HandlerContext {
  return {
    eventId: lease.eventId,
    generation: lease.generation,
    attempt: lease.attempt,
    signal: NEVER,
  };
}

/** `work` has no heartbeat and no forced stop: nothing aborts its handlers. */
const NEVER = new AbortController().signal;

/** Adds one recorded outcome to a loop's summary. */
export function countOutcome(summary: WorkSummary, outcome: ApplyOutcome): void {
  if (outcome.outcome === 'done') summary.done++;
  else if (outcome.outcome === 'retry') summary.retried++;
  else summary.dead++;
}
