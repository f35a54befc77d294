import type { Store } from '../driver/backend.ts';
import { refuseUnlessAllDead } from './redrive.ts';

/**
 * Puts dead messages aside on purpose (docs/ordering.md): each goes `dead` → `skipped`,
 * a final state of its own (never `done`: nothing was applied), and a message with an
 * ordering key releases its key, whose next message becomes ready in the same
 * transaction. Only dead messages: if any id is unknown or not dead, nothing changes and
 * `NotFoundError` / `NotDeadError` is thrown. Returns the ids skipped, sorted.
 */
export async function skip(store: Store, ids: readonly string[]): Promise<string[]> {
  return store.transact(async (x) => {
    const now = store.clock();
    if (ids.length === 0) return [];
    // Locked until COMMIT where rows lock: a concurrent skip or redrive waits, then sees it.
    refuseUnlessAllDead(ids, await store.driver.readForRedrive(x, ids), 'skip');
    const skipped = await store.driver.skip(x, [...new Set(ids)], now);
    if (skipped.length > 0) await store.driver.wake(x);
    return skipped;
  });
}
