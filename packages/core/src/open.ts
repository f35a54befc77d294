import type { OpenStoreOptions, Store } from './driver/backend.ts';
import { loadPostgresDriver } from './driver/postgres/load.ts';
import { openSqliteStore } from './driver/sqlite/open.ts';
import { adoptIdPolicy } from './maintenance/meta.ts';
import { isPostgresUrl } from './target.ts';

export { isPostgresUrl } from './target.ts';

/**
 * Opens a store and applies pending migrations: a PostgreSQL database for a
 * `postgres://` URL, else a SQLite file at that path (created if missing).
 *
 * `options.idPolicy` is the event id policy the store is created with (default: the
 * store keeps what it has, `lesson` for a new one). An empty store takes it; a store
 * that holds messages under another policy is refused (`IdPolicyRefusedError`, exit 4):
 * changing a policy is the explicit `setIdPolicy`.
 */
export async function openStore(target: string, options: OpenStoreOptions = {}): Promise<Store> {
  let store: Store;
  if (isPostgresUrl(target)) {
    const { openPostgresStore } = await loadPostgresDriver();
    store = await openPostgresStore(target, options);
  } else {
    store = await openSqliteStore(target, options);
  }
  if (options.idPolicy !== undefined) {
    try {
      await adoptIdPolicy(store, options.idPolicy);
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  return store;
}
