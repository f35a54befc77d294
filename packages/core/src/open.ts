import type { OpenStoreOptions, Store } from './backend/backend.ts';
import { openSqliteStore } from './backend/sqlite/open.ts';

/** True for a `postgres://` or `postgresql://` URL: the store is a PostgreSQL database. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/**
 * Opens a store and applies pending migrations: a PostgreSQL database for a
 * `postgres://` URL, else a SQLite file at that path (created if missing).
 */
export async function openStore(target: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (isPostgresUrl(target)) {
    const { openPostgresStore } = await import('./backend/postgres/open.ts');
    return openPostgresStore(target, options);
  }
  return openSqliteStore(target, options);
}
