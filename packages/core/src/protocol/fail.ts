import type { Store } from '../backend/backend.ts';
import { LeaseLostError } from '../errors.ts';
import { toFailed } from '../transitions.ts';
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
  return store.writeTransaction(async (trx) => {
    const now = store.clock();
    let read = trx
      .selectFrom('messages')
      .select(['state', 'generation', 'attempts', 'lease_until'])
      .where('event_id', '=', lease.eventId);
    if (store.capabilities.skipLocked) read = read.forUpdate();
    const row = await read.executeTakeFirst();
    const why = fenceViolation(row, lease, now);
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    const next = await toFailed(store, trx, lease, Number(row?.attempts), failure, now);
    return { eventId: lease.eventId, ...next };
  });
}
