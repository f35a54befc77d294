import type { Store } from '../driver/backend.ts';
import type { Lease } from '../types.ts';
import { claimMany } from './claim.ts';

export interface HoldClaimOptions {
  /** Lease length in seconds. Default: the store's `leaseSeconds` (30). */
  leaseSeconds?: number;
}

/**
 * The lab form of {@link claim} (`onceq claim --hold`): the same claim (lazy recovery,
 * pick, `attempts+1`, `generation+1`, lease) in one write transaction, but it awaits
 * `whileHeld(lease)` **before** that transaction commits. While `whileHeld` is pending the
 * claim's locks stay held, so another client shows what it does meanwhile: on
 * PostgreSQL its claim skips the locked row (`FOR UPDATE SKIP LOCKED`) and gets the next
 * one; on SQLite it waits for the write lock (`BEGIN IMMEDIATE`).
 *
 * Commits when `whileHeld` resolves and returns the lease (`null` when nothing was
 * claimable). If `whileHeld` throws, the claim is rolled back and the error rethrown.
 * Keep the hold short outside a lab: every other writer (SQLite) or claimer of the
 * same row (PostgreSQL) waits for it.
 */
export async function holdClaim(
  store: Store,
  options: HoldClaimOptions,
  whileHeld: (lease: Lease | null) => Promise<void>,
): Promise<Lease | null> {
  const [lease] = await claimMany(store, {
    limit: 1,
    ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
    beforeCommit: (leases) => whileHeld(leases[0] ?? null),
  });
  return lease ?? null;
}
