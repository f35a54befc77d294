import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/prepared.ts';
import { LeaseLostError } from '../errors.ts';
import { fenceViolation } from '../machine.ts';
import type { ApplyOutcome, AsyncHandler, LeaseRef, WorkerHandlerContext } from '../types.ts';
import {
  type ApplyManyResult,
  commitWithExpiryRetry,
  type Failed,
  recordResults,
  type Succeeded,
} from './apply.ts';
import { effectResult, type HandlerResult, handlerInput, thrownResult } from './handler-result.ts';
import { settleEffect } from './settle-one.ts';

export type { HandlerResult };

/** One handler result to record against the lease it was computed under. */
export interface Settlement {
  lease: LeaseRef;
  result: HandlerResult;
}

/**
 * Runs a (possibly async) handler on a stored payload **outside** any transaction and
 * turns what it returns or throws into a {@link HandlerResult}: a `HandlerFailure` keeps
 * its kind and code, anything else thrown is a temporary `handler_error`, a payload
 * that is not an object is a permanent `invalid_payload`.
 */
export async function runHandler(
  handler: AsyncHandler,
  payloadText: string,
  context: WorkerHandlerContext,
): Promise<HandlerResult> {
  try {
    const input = handlerInput(payloadText);
    if ('failure' in input) return input;
    return effectResult(await handler(input.payload, context));
  } catch (error) {
    return thrownResult(error);
  }
}

/**
 * Records handler results computed outside the transaction: the effect and the ACK of
 * each success in one write transaction, fenced in SQL at the generation the result was
 * computed under, exactly like {@link apply}'s second half (fence read, effect INSERT,
 * clock read again, fenced ACK; on PostgreSQL effects + ACK as one statement).
 *
 * Why this stays exactly-once although the handler ran outside: the payload it ran on
 * was read from the database under the same generation (by the claim, or by
 * {@link applyAsync}'s fenced read), and a stored payload never changes (a conflicting
 * enqueue is refused, redrive keeps it). The ACK commits only while the message is still
 * `leased` at that generation with time left, in the same transaction as the effect;
 * every other claim bumps the generation. So at most one result per message commits,
 * and the one that commits was computed from the stored payload. A single success needs
 * no fence read at all: it is one fenced write of the effect and the ACK
 * ({@link settleEffect}).
 */
export async function settleMany(
  store: Store,
  settlements: readonly Settlement[],
): Promise<ApplyManyResult> {
  const [only] = settlements;
  // One success: the effect and the ACK as one fenced write, no fence read in front
  // (on PostgreSQL one statement committing by itself; see settle-one.ts).
  if (settlements.length === 1 && only !== undefined && 'effect' in only.result) {
    // Only the fencing token: a heartbeat may have extended the lease since the claim
    // stamped its `leaseUntil`, so the expiry is left to the SQL fence.
    const { eventId, generation } = only.lease;
    return settleEffect(store, { eventId, generation }, only.result.effect);
  }
  return commitWithExpiryRetry(
    store,
    settlements,
    (s) => s.lease.eventId,
    (x, pending, missed) => settleInTransaction(store, x, pending, missed),
  );
}

/**
 * Apply with a handler that may be async and slow: a short fenced read of the stored
 * payload, the handler outside any transaction, then {@link settleMany} at the same
 * generation. Throws {@link LeaseLostError} when the lease does not hold at either end.
 */
export async function applyAsync(
  store: Store,
  lease: LeaseRef,
  handler: AsyncHandler,
  signal: AbortSignal = new AbortController().signal,
): Promise<ApplyOutcome> {
  const row = await store.transact(async (x) => {
    const [found] = await store.statements.readFenced(x, [lease]);
    const why = fenceViolation(found, lease, store.clock());
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    return found as NonNullable<typeof found>;
  });
  const result = await runHandler(handler, row.payload, {
    eventId: lease.eventId,
    generation: lease.generation,
    attempt: Number(row.attempts),
    signal,
  });
  const { outcomes, lost } = await settleMany(store, [{ lease, result }]);
  if (lost[0] !== undefined) throw lost[0];
  return outcomes[0] as ApplyOutcome;
}

async function settleInTransaction(
  store: Store,
  x: Executor,
  settlements: readonly Settlement[],
  lost: LeaseLostError[],
): Promise<ApplyOutcome[]> {
  const now = store.clock();
  const leases = settlements.map((s) => s.lease);
  const rows = new Map((await store.statements.readFenced(x, leases)).map((r) => [r.event_id, r]));
  const succeeded: Succeeded[] = [];
  const failed: Failed[] = [];
  for (const { lease, result } of settlements) {
    const row = rows.get(lease.eventId);
    const why = fenceViolation(row, lease, now);
    if (why !== null) {
      lost.push(new LeaseLostError(lease.eventId, lease.generation, why));
      continue;
    }
    const stored = row as NonNullable<typeof row>;
    if ('effect' in result) {
      succeeded.push({ lease, leaseUntil: Number(stored.lease_until), effect: result.effect });
    } else failed.push({ lease, attempts: Number(stored.attempts), failure: result.failure });
  }

  return recordResults(store, x, succeeded, failed, now);
}
