import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/prepared.ts';
import { LeaseLostError } from '../errors.ts';
import { fenceViolation } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { ApplyOutcome, Effect, FailInput, Handler, LeaseRef } from '../types.ts';
import { recordFailure } from './fail.ts';
import { runSyncHandler } from './handler-result.ts';

export interface ApplyManyResult {
  outcomes: ApplyOutcome[];
  /** Leases found lost (wrong state, newer generation, or expired): nothing of them was written. */
  lost: LeaseLostError[];
}

/**
 * Runs the handler and records its result for one leased message: **the effect and the
 * ACK are written in one transaction** (docs/protocol.md §5), so a crash leaves either both or
 * neither.
 *
 * Inside one write transaction: check the fence (state `leased`, same generation,
 * `now < lease_until`), read the payload **from the database** (never the caller's
 * copy), run the handler, insert the effect, read the clock again (the work may have
 * been slow), then mark the message `done` with the fence in the SQL. (On PostgreSQL
 * the clock is read again after the handler, and one statement then inserts the effects
 * and marks the messages done: `store.statements.ackWithEffects`.) A lost lease at either check rolls the whole
 * transaction back, the effect insert included, and throws {@link LeaseLostError}.
 *
 * A handler failure is recorded in the same transaction: permanent → `dead`;
 * temporary → `ready` after backoff, or `dead` on the last attempt. A handler that
 * throws anything else is treated as a temporary failure with code `handler_error`. An
 * effect the `effects` table would refuse (empty category, amount not an integer from 1
 * to 9,999,999) fails that message permanently with code `invalid_effect`; the rest of
 * a batch commits.
 */
export async function apply(
  store: Store,
  lease: LeaseRef,
  handler: Handler,
): Promise<ApplyOutcome> {
  const { outcomes, lost } = await applyMany(store, [lease], handler);
  if (lost[0] !== undefined) throw lost[0];
  return outcomes[0] as ApplyOutcome;
}

/**
 * Batch form of {@link apply}: one transaction for all `leases`, each still fenced on
 * its own state, generation and lease. Lost leases are skipped and reported; the others
 * commit together, effects and ACKs in the same transaction.
 */
export async function applyMany(
  store: Store,
  leases: readonly LeaseRef[],
  handler: Handler,
): Promise<ApplyManyResult> {
  return commitWithExpiryRetry(
    store,
    leases,
    (lease) => lease.eventId,
    (x, pending, missed) => applyInTransaction(store, x, pending, handler, missed),
  );
}

/**
 * Runs `inTransaction` over `items` in one write transaction. Leases that ran out during
 * it ({@link ExpiredDuringApply}) roll the whole transaction back, effects included; they
 * are reported lost and the rest is retried in a new transaction. Shared by apply and the
 * worker's settle.
 */
export async function commitWithExpiryRetry<T>(
  store: Store,
  items: readonly T[],
  eventIdOf: (item: T) => string,
  inTransaction: (
    x: Executor,
    pending: readonly T[],
    missed: LeaseLostError[],
  ) => Promise<ApplyOutcome[]>,
): Promise<ApplyManyResult> {
  const lost: LeaseLostError[] = [];
  let pending = [...items];
  while (pending.length > 0) {
    // Fence misses of this attempt only: a rolled-back or re-run transaction (PostgreSQL
    // retries one after a deadlock) finds them again, so they must not pile up.
    const missed: LeaseLostError[] = [];
    try {
      const current = pending;
      const outcomes = await store.transact((x) => {
        missed.length = 0;
        return inTransaction(x, current, missed);
      });
      crashPoint('after-commit');
      return { outcomes, lost: [...lost, ...missed] };
    } catch (error) {
      if (!(error instanceof ExpiredDuringApply)) throw error;
      // Rolled back, effects included. Retry the rest without the leases that ran out.
      lost.push(...error.lost);
      const gone = new Set(error.lost.map((l) => l.eventId));
      pending = pending.filter((item) => !gone.has(eventIdOf(item)));
    }
  }
  return { outcomes: [], lost };
}

/**
 * Thrown inside the apply (or settle) transaction when leases ran out between the fence
 * read and the ACK: the transaction rolls back, effects included, and the caller retries
 * the rest of the batch without them.
 */
export class ExpiredDuringApply extends Error {
  readonly lost: LeaseLostError[];
  constructor(lost: LeaseLostError[]) {
    super('leases expired during apply');
    this.lost = lost;
  }
}

async function applyInTransaction(
  store: Store,
  x: Executor,
  leases: readonly LeaseRef[],
  handler: Handler,
  lost: LeaseLostError[],
): Promise<ApplyOutcome[]> {
  const now = store.clock();
  const rows = new Map((await store.statements.readFenced(x, leases)).map((r) => [r.event_id, r]));

  const succeeded: Succeeded[] = [];
  const failed: Failed[] = [];
  for (const lease of leases) {
    const row = rows.get(lease.eventId);
    const why = fenceViolation(row, lease, now);
    if (why !== null) {
      lost.push(new LeaseLostError(lease.eventId, lease.generation, why));
      continue;
    }
    const stored = row as NonNullable<typeof row>;
    const context = {
      eventId: lease.eventId,
      generation: lease.generation,
      attempt: Number(stored.attempts),
    };
    const result = runSyncHandler(handler, stored.payload, context);
    if ('effect' in result)
      succeeded.push({ lease, leaseUntil: Number(stored.lease_until), effect: result.effect });
    else failed.push({ lease, attempts: Number(stored.attempts), failure: result.failure });
  }

  return recordResults(store, x, succeeded, failed, now);
}

/** A handler's success, with the lease it was computed under and that lease's end. */
export interface Succeeded {
  lease: LeaseRef;
  leaseUntil: number;
  effect: Effect;
}

/** A handler's failure, with the attempts the fence read found. */
export interface Failed {
  lease: LeaseRef;
  attempts: number;
  failure: FailInput;
}

/**
 * The writing half of apply, shared with the worker's settle (handlers run outside the
 * transaction): inside the caller's write transaction, whose fence read found every
 * lease of `succeeded` and `failed` valid at `now`, insert the effects, read the clock
 * again (the work may have been slow), ACK with the fence in SQL, then record the
 * failures. Leases that ran out meanwhile throw {@link ExpiredDuringApply}; a fenced
 * write that matches fewer rows than the read promised throws {@link LeaseLostError}.
 * Either way the whole transaction rolls back, effects included.
 */
export async function recordResults(
  store: Store,
  x: Executor,
  succeeded: readonly Succeeded[],
  failed: readonly Failed[],
  now: number,
): Promise<ApplyOutcome[]> {
  const outcomes: ApplyOutcome[] = [];
  crashPoint('after-handler');
  if (succeeded.length > 0) {
    // The second clock check, after the handler (and, on SQLite, the effect insert): the
    // work may have been slow. The backend runs it where its ACK needs the time.
    const secondCheck = (): number => {
      const later = store.clock();
      const expired = succeeded.filter(({ leaseUntil }) => later >= leaseUntil);
      if (expired.length > 0) {
        throw new ExpiredDuringApply(
          expired.map(
            ({ lease, leaseUntil }) =>
              new LeaseLostError(
                lease.eventId,
                lease.generation,
                `the lease expired at ${leaseUntil} during apply (now ${later})`,
              ),
          ),
        );
      }
      return later;
    };
    const acked = await store.statements.ackWithEffects(x, succeeded, now, secondCheck);
    if (acked !== succeeded.length) {
      // The SQL fence disagreed with the read above: the lease is gone. Roll everything
      // back (effects included) with the typed refusal, never a plain Error.
      const [first] = succeeded as [(typeof succeeded)[number]];
      throw new LeaseLostError(
        first.lease.eventId,
        first.lease.generation,
        `the fenced ACK matched ${acked} of ${succeeded.length} messages; nothing was written`,
      );
    }
    for (const { lease, effect } of succeeded)
      outcomes.push({ eventId: lease.eventId, outcome: 'done', effect });
  }

  for (const { lease, attempts, failure } of failed) {
    const next = await recordFailure(store, x, lease, attempts, failure, now);
    const detail = failure.detail ?? '';
    outcomes.push(
      next.state === 'dead'
        ? { eventId: lease.eventId, outcome: 'dead', code: failure.code, detail }
        : {
            eventId: lease.eventId,
            outcome: 'retry',
            code: failure.code,
            detail,
            availableAt: next.availableAt,
          },
    );
  }
  crashPoint('after-ack');
  return outcomes;
}
