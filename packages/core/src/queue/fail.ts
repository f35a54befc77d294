import type { Store } from '../driver/backend.ts';
import { LeaseLostError } from '../errors.ts';
import { fenceViolation } from '../machine.ts';
import type { FailInput, LeaseRef } from '../types.ts';
import { complete } from './complete.ts';

export interface FailResult {
  eventId: string;
  state: 'ready' | 'dead';
  /** When the message can be claimed again (state `ready`). */
  availableAt: number;
}

/**
 * Reports a failure for a held lease (`onceq fail`): a short fenced read for the attempt
 * the lease's claim counted, then {@link complete} records it, fenced like every result.
 * `permanent` → `dead`. `temporary` → `ready` with `available_at = now + backoff` (1 s,
 * then 2 s) while the cycle has attempts left; on the last attempt → `dead`. Throws
 * {@link LeaseLostError} when the lease no longer holds; nothing changes then.
 */
export async function fail(store: Store, lease: LeaseRef, failure: FailInput): Promise<FailResult> {
  const attempt = await store.transact(async (x) => {
    const [row] = await store.driver.readFenced(x, [lease]);
    const why = fenceViolation(row, lease, store.clock());
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    return Number(row?.attempts);
  });
  const claimed = { eventId: lease.eventId, generation: lease.generation, attempt };
  const { outcomes, lost } = await complete(store, [{ lease: claimed, result: { failure } }]);
  if (lost[0] !== undefined) throw lost[0];
  const [outcome] = outcomes;
  if (outcome?.outcome === 'retry') {
    return { eventId: lease.eventId, state: 'ready', availableAt: outcome.availableAt };
  }
  return { eventId: lease.eventId, state: 'dead', availableAt: store.clock() };
}
