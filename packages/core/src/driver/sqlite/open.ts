import { Database as BunDatabase, constants } from 'bun:sqlite';
import { Kysely } from 'kysely';
import { systemClock } from '../../clock.ts';
import { StoreUnavailableError } from '../../errors.ts';
import { isSchemaCurrent, migrateToLatest } from '../../migrations/index.ts';
import type { Database } from '../../schema.ts';
import { DEFAULT_PROTOCOL } from '../../types.ts';
import type { OpenStoreOptions, Store } from '../backend.ts';
import { inCallerTransaction } from '../caller-transaction.ts';
import { sqliteDialect } from '../sql-text.ts';
import { sqliteCallerRunner } from './caller-transaction.ts';
import { BunSqliteDialect } from './dialect.ts';
import { SqliteExecutor } from './executor.ts';
import { sqliteDriver } from './statements.ts';
import { asStorageError } from './storage.ts';

/**
 * Opens (creating if needed) a SQLite store file and applies pending migrations.
 * One store per file per process: bun:sqlite is synchronous, so two connections to one
 * file in one thread deadlock. Competing clients are separate processes.
 */
export async function openSqliteStore(
  path: string,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const raw = options.readOnly === true ? openReadOnly(path) : openReadWrite(path, options);
  const dialect = new BunSqliteDialect({
    database: raw,
    busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
    location: path,
  });
  const onQuery = options.onQuery;
  const db = new Kysely<Database>({
    dialect,
    ...(onQuery ? { log: (event) => onQuery(event.query.sql, event.query.parameters) } : {}),
  });
  try {
    if (options.readOnly === true) {
      if (!(await isSchemaCurrent(db as Kysely<unknown>))) {
        // Behind this build (or not an onceq store yet): migrating needs a writer.
        await db.destroy();
        return openSqliteStore(path, { ...options, readOnly: false });
      }
    } else {
      await migrateToLatest(db as Kysely<unknown>, 'sqlite');
    }
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const connection = dialect.connection;
  const executor = new SqliteExecutor(connection, onQuery);
  return {
    kind: 'sqlite',
    driver: sqliteDriver,
    clock: options.clock ?? systemClock,
    protocol: { ...DEFAULT_PROTOCOL, ...options.protocol },
    location: path,
    schema: 'main',
    transact: (fn, within) =>
      within === undefined
        ? dialect.connection.transact(() => fn(executor))
        : inCallerTransaction(sqliteCallerRunner(within), sqliteDialect, fn, onQuery),
    read: (fn) => dialect.connection.read(() => fn(executor)),
    busyRetries: () => dialect.connection.busy.retries,
    close: () => db.destroy(),
  };
}

function openReadWrite(path: string, options: OpenStoreOptions): BunDatabase {
  try {
    const raw = new BunDatabase(path, { create: true, readwrite: true, strict: false });
    // Pragmas are per connection and no-ops inside a transaction: set them here, first.
    raw.run('PRAGMA busy_timeout = 5000');
    // Space that prune frees goes back to the file system page by page (prune runs
    // `PRAGMA incremental_vacuum`), never by rewriting the whole file. SQLite takes the
    // mode only before the first table is created; on an older store it takes effect at
    // its next full `VACUUM` (`onceq prune … --vacuum`), once.
    raw.run('PRAGMA auto_vacuum = INCREMENTAL');
    raw.run('PRAGMA journal_mode = WAL');
    // SQLite reuses the -wal file from its start after each checkpoint and never shrinks
    // it: one checkpoint held back by a long reader (a prune, a backup) would leave the
    // file at its largest for good. Cut back to one autocheckpoint's worth (1000 pages
    // of 4 KiB) whenever the log restarts, so it stays that size under any load.
    raw.run('PRAGMA journal_size_limit = 4194304');
    raw.run(`PRAGMA synchronous = ${options.synchronous ?? 'FULL'}`);
    raw.run('PRAGMA foreign_keys = ON');
    // From here on the dialect retries SQLITE_BUSY itself, with jitter.
    raw.run('PRAGMA busy_timeout = 0');
    return raw;
  } catch (error) {
    throw cannotOpen(path, error);
  }
}

/**
 * The WAL mode persists in the file: whoever created the store set it, a reader need not.
 * A WAL reader needs the `-shm` file; on read-only media (or a directory nobody may write)
 * it cannot be created, and no writer can be active either, so the file is then opened
 * as immutable (no locks, no `-shm`).
 */
function openReadOnly(path: string): BunDatabase {
  let raw: BunDatabase | undefined;
  try {
    raw = new BunDatabase(path, { readonly: true, strict: false });
    raw.run('PRAGMA busy_timeout = 0');
    // The first read opens the WAL index: this is where read-only media fail.
    raw.query('SELECT count(*) FROM sqlite_master').get();
    return raw;
  } catch (error) {
    raw?.close();
    try {
      const uri = `file:${path.replace(/%/g, '%25').replace(/\?/g, '%3f').replace(/#/g, '%23')}?immutable=1`;
      return new BunDatabase(uri, constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI);
    } catch {
      throw cannotOpen(path, error);
    }
  }
}

function cannotOpen(path: string, error: unknown): Error {
  // A full disk, a read-only file system, a missing directory: one sentence naming it.
  const storage = asStorageError(error, path);
  if (storage !== error) return storage as Error;
  return new StoreUnavailableError(
    `cannot open SQLite store ${path}: ${(error as Error).message}`,
    {
      cause: error,
    },
  );
}
