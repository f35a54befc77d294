import type { Store } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import type { LeaseRef } from '../types.ts';
import { explainLost } from './extend.ts';

export interface ReleaseManyResult {
  /** Event ids given back: ready now, their attempt not spent. */
  released: string[];
  lost: LeaseLostError[];
}

/**
 * Gives back a lease whose handler never started (a worker shutting down with claimed
 * messages it will not process): `leased → ready`, available now, and the claim's
 * attempt returned (`attempts - 1`, never below 0), so a graceful shutdown never burns
 * the retry budget. Fenced in SQL like the ACK (state `leased`, same generation,
 * `now < lease_until`); the generation stays bumped, so the releasing holder can never
 * ACK afterwards. Throws {@link LeaseLostError} when refused; nothing changes then.
 */
export async function release(store: Store, lease: LeaseRef): Promise<void> {
  const { lost } = await releaseMany(store, [lease]);
  if (lost[0] !== undefined) throw lost[0];
}

/**
 * {@link release} for several leases in one write transaction, each fenced on its own.
 * `urgent`: on PostgreSQL it waits for a connection ahead of claims and results (a worker
 * giving back what it could not settle, like a heartbeat keeping a lease alive).
 */
export async function releaseMany(
  store: Store,
  leases: readonly LeaseRef[],
  urgent = false,
): Promise<ReleaseManyResult> {
  if (leases.length === 0) return { released: [], lost: [] };
  const releaseAll = async (x: Parameters<Parameters<Store['transact']>[0]>[0]) => {
    const now = store.clock();
    const released: string[] = [];
    const refused: LeaseRef[] = [];
    for (const lease of leases) {
      if ((await store.driver.release(x, lease, now)) === 1) released.push(lease.eventId);
      else refused.push(lease);
    }
    return { released, lost: await explainLost(store, x, refused, now) };
  };
  return urgent ? store.transact(releaseAll, undefined, { urgent }) : store.transact(releaseAll);
}
