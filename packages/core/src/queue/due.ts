import type { Store } from '../driver/backend.ts';

/** When something next becomes claimable, as far as the stored rows say. */
export interface NextDue {
  /** Earliest `available_at` of a ready message (may be in the past), or null. */
  readyAt: number | null;
  /** Earliest `lease_until` of a leased message: when lazy recovery can take it back. */
  leaseExpiresAt: number | null;
  /** Now on the clock those times are on (PostgreSQL: the server's), whole seconds. */
  now: number;
}

/**
 * The earliest `available_at` of the ready rows and the earliest `lease_until` of the
 * leased ones, in one read statement: each is the head of an index range
 * (`messages_ready_queue`, one per queue, and `messages_lease`), so this stays cheap on
 * any number of done rows.
 * The long-running worker sleeps until the earlier of the two when it found nothing to
 * claim, so a message in backoff is picked up when its backoff ends.
 */
export async function nextDue(store: Store): Promise<NextDue> {
  const hostNow = store.clock();
  const row = await store.read((x) => store.driver.nextDue(x, hostNow));
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    readyAt: num(row.ready_at),
    leaseExpiresAt: num(row.lease_at),
    now: num(row.now) ?? hostNow,
  };
}

/** Why nothing is claimable now: messages waiting out a backoff and leases still held. */
export interface WaitingReport {
  /** Ready messages whose `available_at` is still ahead. */
  inBackoff: number;
  /** The earliest of those, or null. */
  nextReadyAt: number | null;
  /** Leased messages (held by a worker, or expired and not recovered yet). */
  leased: number;
  /** The earliest `lease_until` among them, or null. */
  nextLeaseExpiry: number | null;
}

/** For `work` when it found nothing: what is waiting and until when, one statement. */
export async function waitingReport(store: Store, now: number): Promise<WaitingReport> {
  const row = await store.read((x) => store.driver.waiting(x, now));
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    inBackoff: Number(row.in_backoff ?? 0),
    nextReadyAt: num(row.next_ready),
    leased: Number(row.leased ?? 0),
    nextLeaseExpiry: num(row.next_expiry),
  };
}
