import type { Store } from '../driver/backend.ts';

/** One ordering key held by its dead head (docs/ordering.md). */
export interface BlockedKey {
  /** The queue the key is in (keys are scoped to a queue). */
  queue: string;
  /** The ordering key. */
  key: string;
  /** Its dead head: redrive it (the key resumes in order) or skip it. */
  eventId: string;
  /** When the head died (its `updated_at`). */
  deadSince: number;
  /** Messages of the key waiting behind the head. */
  waiting: number;
  /** The head's error code (why it died), as `show` gives it. */
  code: string | null;
  /** The head's error detail. */
  detail: string | null;
}

/** The blocked keys: how many, and the first `limit` by queue and key (default 20; 0: the count alone). */
export interface BlockedKeys {
  count: number;
  keys: BlockedKey[];
}

/**
 * The ordering keys whose head is dead, so nothing more of the key is handed out until
 * it is redriven or skipped; of `queue` alone when given. One read snapshot on both backends.
 */
export async function blockedKeys(
  store: Store,
  options: { limit?: number; queue?: string } = {},
): Promise<BlockedKeys> {
  const { queue } = options;
  const limit = options.limit ?? 20;
  return store.read(async (x) => {
    const count = await store.driver.countBlockedKeys(x, queue);
    if (count === 0 || limit === 0) return { count, keys: [] };
    const rows = await store.driver.blockedKeys(x, limit, queue);
    return {
      count,
      keys: rows.map((row) => ({
        queue: row.queue,
        key: row.ordering_key,
        eventId: row.event_id,
        deadSince: Number(row.updated_at),
        waiting: Number(row.behind),
        code: row.last_error_code,
        detail: row.last_error_detail,
      })),
    };
  });
}
