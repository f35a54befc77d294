import type { Store } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import { type ExtendedLease, extendMany } from '../queue/extend.ts';
import type { LeaseRef } from '../types.ts';

/** Who holds the leases a heartbeat keeps alive (the worker's claimer). */
export interface LeaseHolder {
  /** The held leases to renew, by their lease length in seconds. */
  renewable(): ReadonlyMap<number, readonly LeaseRef[]>;
  /** Leases renewed by one beat, each valid until its new `leaseUntil`. */
  extended(extended: readonly ExtendedLease[]): void;
  /** Leases an extension was refused for: their handlers must stop, their ACK would fail. */
  lost(lost: readonly LeaseLostError[], byHeartbeat: true): void;
}

export interface Heartbeat {
  /**
   * The beat running now, resolving when it is over, or `undefined` when none is. The
   * worker awaits it before it records or releases leases, so a beat never extends a
   * lease its own ACK has just closed (the extension would be refused and the message
   * wrongly counted lost).
   */
  running(): Promise<void> | undefined;
  /** Stops the timer and waits for a running beat. */
  stop(): Promise<void>;
}

/**
 * Keeps the worker's held leases alive while their handlers run: every third of the
 * shortest lease it extends every lease `holder` holds to `now + ` its lease length (a
 * worker's queues may each have their own), in one transaction per length, each fenced on
 * its own. A refused extension is reported once per lease. A beat never overlaps the
 * previous one, and with nothing held a beat costs nothing.
 *
 * A third leaves two beats of slack: one slow or failed beat does not lose the lease.
 */
export function startHeartbeat(
  store: Store,
  holder: LeaseHolder,
  shortestLeaseSeconds: number,
  /** A beat failed as a whole (store unreachable): the next beat tries again. */
  failed: (error: unknown) => void,
): Heartbeat {
  let running: Promise<void> | undefined;
  const beat = async () => {
    for (const [leaseSeconds, leases] of holder.renewable()) {
      if (leases.length === 0) continue;
      try {
        const { extended, lost } = await extendMany(store, leases, leaseSeconds);
        if (extended.length > 0) holder.extended(extended);
        if (lost.length > 0) holder.lost(lost, true);
      } catch (error) {
        failed(error);
      }
    }
  };
  const timer = setInterval(
    () => {
      if (running !== undefined) return;
      running = beat().finally(() => {
        running = undefined;
      });
    },
    Math.max(50, (shortestLeaseSeconds * 1000) / 3),
  );
  return {
    running: () => running,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
