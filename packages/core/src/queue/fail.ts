import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/prepared.ts';
import { LeaseLostError } from '../errors.ts';
import { afterFailure, fenceViolation } from '../machine.ts';
import type { FailInput, LeaseRef } from '../types.ts';

export interface FailResult {
  eventId: string;
  state: 'ready' | 'dead';
  /** When the message can be claimed again (state `ready`). */
  availableAt: number;
}

/**
 * Reports a failure for a held lease, fenced like {@link apply}. `permanent` → `dead`.
 * `temporary` → `ready` with `available_at = now + backoff` (1 s, then 2 s) while the
 * cycle has attempts left; on the last attempt → `dead`. Throws {@link LeaseLostError}
 * when the lease no longer holds; nothing changes then.
 */
export async function fail(store: Store, lease: LeaseRef, failure: FailInput): Promise<FailResult> {
  return store.transact(async (x) => {
    const now = store.clock();
    const [row] = await store.statements.readFenced(x, [lease]);
    const why = fenceViolation(row, lease, now);
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    const next = await recordFailure(store, x, lease, Number(row?.attempts), failure, now);
    return { eventId: lease.eventId, ...next };
  });
}

/**
 * leased → ready (temporary failure with attempts left, available after backoff) or →
 * dead (permanent failure, or the last attempt failed), as {@link afterFailure} decides,
 * in the caller's transaction. `attempts` is the row's current value, read under the
 * same fence. A dead message's `available_at` is the time it died. Throws
 * {@link LeaseLostError} when the fenced update matches no row (the caller rolls back).
 */
export async function recordFailure(
  store: Store,
  x: Executor,
  lease: LeaseRef,
  attempts: number,
  failure: FailInput,
  now: number,
): Promise<{ state: 'ready' | 'dead'; availableAt: number }> {
  const move = afterFailure(store.protocol, attempts, failure, now);
  const changed = await store.statements.fail(x, lease, move, now);
  if (changed !== 1) {
    throw new LeaseLostError(
      lease.eventId,
      lease.generation,
      'the fenced failure update matched no row (state, generation or lease changed); rolled back',
    );
  }
  return { state: move.state, availableAt: move.availableAt };
}
