import type { Store } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import { extendMany } from '../queue/extend.ts';
import type { LeaseRef } from '../types.ts';

export interface HeartbeatEvents {
  /** Leases renewed by one beat. */
  extended(count: number): void;
  /** Leases an extension was refused for: their handlers must stop, their ACK would fail. */
  lost(lost: readonly LeaseLostError[]): void;
  /** A beat failed as a whole (store unreachable): the next beat tries again. */
  failed(error: unknown): void;
}

/**
 * Keeps the leases of a batch alive while its handlers run: every third of the lease it
 * extends every lease `held()` returns to `now + leaseSeconds`, in one transaction, each
 * fenced on its own. A refused extension is reported once per lease. A beat never
 * overlaps the previous one. Returns `stop`, which waits for a running beat to end.
 *
 * A third leaves two beats of slack: one slow or failed beat does not lose the lease.
 */
export function startHeartbeat(
  store: Store,
  held: () => readonly LeaseRef[],
  leaseSeconds: number,
  events: HeartbeatEvents,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const beat = async () => {
    const leases = held();
    if (leases.length === 0) return;
    try {
      const { extended, lost } = await extendMany(store, leases, leaseSeconds);
      if (extended.length > 0) events.extended(extended.length);
      if (lost.length > 0) events.lost(lost);
    } catch (error) {
      events.failed(error);
    }
  };
  const timer = setInterval(
    () => {
      if (running !== undefined) return;
      running = beat().finally(() => {
        running = undefined;
      });
    },
    Math.max(50, (leaseSeconds * 1000) / 3),
  );
  return async () => {
    clearInterval(timer);
    await running;
  };
}
