import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/executor.ts';
import { LeaseLostError } from '../errors.ts';
import { fenceViolation } from '../machine.ts';
import type { LeaseRef } from '../types.ts';

/** A lease that an extension renewed: valid until `leaseUntil` now. */
export interface ExtendedLease extends LeaseRef {
  readonly leaseUntil: number;
}

export interface ExtendManyResult {
  extended: ExtendedLease[];
  /** Leases that could not be extended (wrong state, other generation, already expired). */
  lost: LeaseLostError[];
}

/**
 * Extends a held lease to `now + seconds` (the heartbeat of a long handler), fenced in
 * SQL like the ACK: only while the message is `leased` at this generation and
 * `now < lease_until`. A lease that already ran out is never revived, even when nobody
 * claimed the message since: its holder may have been declared dead already.
 * Throws {@link LeaseLostError} when refused; nothing changes then.
 *
 * `seconds` defaults to the store's lease length (30).
 */
export async function extend(
  store: Store,
  lease: LeaseRef,
  seconds: number = store.protocol.leaseSeconds,
): Promise<ExtendedLease> {
  const { extended, lost } = await extendMany(store, [lease], seconds);
  if (lost[0] !== undefined) throw lost[0];
  return extended[0] as ExtendedLease;
}

/**
 * {@link extend} for several leases in one write transaction, each fenced on its own: the
 * worker's heartbeat for a batch. Refused leases are reported, the others extended.
 * On PostgreSQL it waits for a connection ahead of every other statement of the store.
 */
export async function extendMany(
  store: Store,
  leases: readonly LeaseRef[],
  seconds: number = store.protocol.leaseSeconds,
): Promise<ExtendManyResult> {
  if (!Number.isInteger(seconds) || seconds < 1) {
    throw new RangeError(`lease must be a positive whole number of seconds, got ${seconds}`);
  }
  if (leases.length === 0) return { extended: [], lost: [] };
  const extendAll = async (x: Executor): Promise<ExtendManyResult> => {
    const now = store.clock();
    const leaseUntil = now + seconds;
    const extended: ExtendedLease[] = [];
    const refused: LeaseRef[] = [];
    for (const lease of leases) {
      if ((await store.driver.extend(x, lease, now, leaseUntil)) === 1) {
        extended.push({ eventId: lease.eventId, generation: lease.generation, leaseUntil });
      } else refused.push(lease);
    }
    return { extended, lost: await explainLost(store, x, refused, now) };
  };
  // A held lease kept alive goes before new work: first in line for a connection.
  return store.transact(extendAll, undefined, { urgent: true });
}

/** Why each refused lease was refused, read in the same transaction. */
export async function explainLost(
  store: Store,
  x: Executor,
  refused: readonly LeaseRef[],
  now: number,
): Promise<LeaseLostError[]> {
  if (refused.length === 0) return [];
  const rows = new Map((await store.driver.readFenced(x, refused)).map((r) => [r.event_id, r]));
  return refused.map(
    (lease) =>
      new LeaseLostError(
        lease.eventId,
        lease.generation,
        fenceViolation(rows.get(lease.eventId), lease, now) ?? 'the fenced update matched no row',
      ),
  );
}
