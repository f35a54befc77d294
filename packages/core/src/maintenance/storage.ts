/** What a store costs on disk, for `onceq status --json` and the bench. */
import type { Store } from '../driver/backend.ts';

/** Bytes a tombstone keeps in its payload's place: the SHA-256 as 64 hex characters. */
const HASH_BYTES = 64;

export interface StorageUse {
  /**
   * Bytes on disk: SQLite the database's pages (free pages included, the transient WAL
   * not), application tables in the same file included; PostgreSQL onceq's tables with their indexes
   * and TOAST.
   */
  bytes: number;
  /** Messages stored (every state, pruned tombstones included). */
  events: number;
  /** `bytes / events`, rounded; null for an empty store. */
  bytesPerEvent: number | null;
  /** Messages that keep their payload. */
  live: number;
  /** Tombstones: pruned messages, their payload replaced by its hash. */
  pruned: number;
  /** The kept payloads' bytes (UTF-8). */
  payloadBytes: number;
  /**
   * What a live event costs, estimated: an equal share of what is neither a payload nor
   * a tombstone's hash (rows, ids, indexes, effects, free space), plus the average
   * payload. Null without live events.
   */
  bytesPerLiveEvent: number | null;
  /** What a tombstone costs, estimated the same way: the equal share plus its hash. Null without any. */
  bytesPerPrunedEvent: number | null;
}

/**
 * Reads the store's size, and from the counters (one statement each) how many events it
 * holds, live and pruned, and their payloads' bytes: the same cost on any store size.
 */
export async function storageUse(store: Store): Promise<StorageUse> {
  const [bytes, counts] = await store.read(
    async (x) => [await store.driver.storageBytes(x), await store.driver.storageCounts(x)] as const,
  );
  const { events, live, payloadBytes } = counts;
  const pruned = Math.max(0, events - live);
  const share = events === 0 ? 0 : (bytes - payloadBytes - HASH_BYTES * pruned) / events;
  return {
    bytes,
    events,
    bytesPerEvent: events === 0 ? null : Math.round(bytes / events),
    live,
    pruned,
    payloadBytes,
    bytesPerLiveEvent: live === 0 ? null : Math.round(share + payloadBytes / live),
    bytesPerPrunedEvent: pruned === 0 ? null : Math.round(share + HASH_BYTES),
  };
}
