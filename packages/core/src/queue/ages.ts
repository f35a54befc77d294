import type { Store } from '../driver/backend.ts';

/** How long the oldest work has waited, as stored times (Unix seconds); null when none. */
export interface QueueAges {
  /** The smallest `available_at` of a `ready` message (may lie in the future during backoff). */
  oldestReadyAt: number | null;
  /** The smallest `updated_at` of a `dead` message: when the oldest dead message died. */
  oldestDeadAt: number | null;
}

/**
 * The two "how far behind are we" figures of an overview, read only, in one statement. The ready figure
 * is one step down the claim index `(state, available_at, event_id)`; the dead figure
 * reads the dead rows through the same index's `state` prefix (the DLQ is small in a
 * healthy queue; an index on `(state, updated_at)` would make it one step too).
 */
export async function queueAges(store: Store): Promise<QueueAges> {
  const row = await store.read((x) => store.driver.ages(x));
  const toSeconds = (at: unknown) => (at === null || at === undefined ? null : Number(at));
  return { oldestReadyAt: toSeconds(row.ready_at), oldestDeadAt: toSeconds(row.dead_at) };
}
