/** What a store costs on disk, for `onceq status --json` and the bench. */
import type { Store } from '../driver/backend.ts';

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
}

/** Reads the store's size; `events` is the caller's count of stored messages. */
export async function storageUse(store: Store, events: number): Promise<StorageUse> {
  const bytes = await store.read((x) => store.driver.storageBytes(x));
  return { bytes, events, bytesPerEvent: events === 0 ? null : Math.round(bytes / events) };
}
