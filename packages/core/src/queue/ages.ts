import type { Store } from '../driver/backend.ts';
import { stateLiteral } from '../driver/shared-statements.ts';

/** How long the oldest work has waited, as stored times (Unix seconds); null when none. */
export interface QueueAges {
  /** The smallest `available_at` of a `ready` message (may lie in the future during backoff). */
  oldestReadyAt: number | null;
  /** The smallest `updated_at` of a `dead` message: when the oldest dead message died. */
  oldestDeadAt: number | null;
}

/**
 * The two "how far behind are we" figures of an overview, read only. The ready figure
 * is one step down the claim index `(state, available_at, event_id)`; the dead figure
 * reads the dead rows through the same index's `state` prefix (the DLQ is small in a
 * healthy queue; an index on `(state, updated_at)` would make it one step too).
 */
export async function queueAges(store: Store): Promise<QueueAges> {
  const [ready, dead] = await Promise.all([
    store.db
      .selectFrom('messages')
      .select((eb) => eb.fn.min<number>('available_at').as('at'))
      .where('state', '=', stateLiteral('ready'))
      .executeTakeFirst(),
    store.db
      .selectFrom('messages')
      .select((eb) => eb.fn.min<number>('updated_at').as('at'))
      .where('state', '=', stateLiteral('dead'))
      .executeTakeFirst(),
  ]);
  const toSeconds = (at: number | null | undefined) =>
    at === null || at === undefined ? null : Number(at);
  return { oldestReadyAt: toSeconds(ready?.at), oldestDeadAt: toSeconds(dead?.at) };
}
