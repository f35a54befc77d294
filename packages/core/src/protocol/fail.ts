import type { Store } from '../backend/backend.ts';
import { LeaseLostError } from '../errors.ts';
import { readForFence, toFailed } from '../transitions.ts';
import type { FailInput, LeaseRef } from '../types.ts';
import { fenceViolation } from './apply.ts';

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
    const [row] = await readForFence(store, x, [lease]);
    const why = fenceViolation(row, lease, now);
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    const next = await toFailed(store, x, lease, Number(row?.attempts), failure, now);
    return { eventId: lease.eventId, ...next };
  });
}
