/**
 * Raw SQL on a test store's database through a connection of the test's own, never the
 * store's: to set up a state no operation writes (a forged row, a dropped constraint) or
 * to read what the store wrote. SQLite: a second `bun:sqlite` connection to the same
 * file; PostgreSQL: a one-connection pool on the same database with `search_path` at the
 * store's schema, numbers parsed as the store parses them.
 *
 * Each call opens the connection and closes it before it returns, so a SQLite store that
 * closes afterwards is the file's last connection (and deletes its `-wal`). Only between
 * the store's transactions: bun:sqlite is synchronous, so a statement here that waits for
 * a write lock the same process holds would wait forever.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import type { Store } from '@onceq/core';
import { BunSqliteDialect, type Database } from '@onceq/core/internal';
import { Kysely, PostgresDialect } from 'kysely';

/** Where a store's data lives: a SQLite file, or a PostgreSQL URL and the store's schema. */
export interface RawTarget {
  target: string;
  /** PostgreSQL: the store's schema. Default `onceq`, as `openStore`'s. */
  schema?: string | undefined;
}

const targets = new WeakMap<Store, RawTarget>();

/** Tells {@link rawDb} where `store` lives (a PostgreSQL store; a SQLite store says so itself). */
export function rememberTarget(store: Store, target: RawTarget): void {
  targets.set(store, target);
}

function targetOf(store: Store | RawTarget): RawTarget {
  if ('target' in store) return store;
  const known = targets.get(store);
  if (known !== undefined) return known;
  if (!/^postgres(ql)?:/.test(store.location)) return { target: store.location };
  throw new Error(
    `rawDb: no URL known for the PostgreSQL store ${store.location}: rememberTarget(store, …) first`,
  );
}

/** int8 (count, sum, BIGINT) and numeric as JS numbers, like the store's own pool. */
const NUMBER_OIDS = new Set([20, 1700]);

/** Runs `fn` with a Kysely instance on a connection of its own to `store`'s database. */
export async function rawDb<T>(
  store: Store | RawTarget,
  fn: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  const db = await openRawDb(store);
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

/**
 * {@link rawDb}'s connection kept open for many statements (a model run): `destroy()` it
 * before the store closes.
 */
export async function openRawDb(store: Store | RawTarget): Promise<Kysely<Database>> {
  const { target, schema } = targetOf(store);
  if (/^postgres(ql)?:/.test(target)) {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({
      connectionString: target,
      max: 1,
      // `openStore`'s default schema when none is named.
      options: `-c search_path=${schema ?? 'onceq'}`,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          NUMBER_OIDS.has(oid) && format !== 'binary'
            ? (value: string) => Number(value)
            : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  }
  const raw = new BunDatabase(target, { readwrite: true, strict: false });
  raw.run('PRAGMA foreign_keys = ON');
  raw.run('PRAGMA busy_timeout = 0');
  return new Kysely<Database>({
    dialect: new BunSqliteDialect({ database: raw, busyTimeoutMs: 10_000, location: target }),
  });
}
