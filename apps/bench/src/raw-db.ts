/**
 * SQL the bench runs around a store (filling a large store, dropping constraints,
 * ANALYZE, EXPLAIN, dropping a schema) on a connection of its own to the store's
 * database, never the store's.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import type { Database } from '@onceq/core/internal';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';

/** Runs `fn` with a Kysely instance on its own connection to `schema` of the PostgreSQL at `url`. */
export async function withPostgres<T>(
  url: string,
  schema: string,
  fn: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Drops the CHECKs on `messages.event_id` in the schema `db` is scoped to, so a large
 * store can be filled with generated ids in one INSERT … SELECT.
 */
export async function dropIdChecks(db: Kysely<Database>): Promise<void> {
  const checks = await sql<{ conname: string }>`
    SELECT conname FROM pg_constraint
    WHERE conrelid = 'messages'::regclass AND contype = 'c'
      AND pg_get_constraintdef(oid) LIKE '%event_id%'`.execute(db);
  for (const { conname } of checks.rows)
    await sql`ALTER TABLE messages DROP CONSTRAINT ${sql.id(conname)}`.execute(db);
}

/** Drops the store schema `schema` (and everything in it) of the PostgreSQL at `url`. */
export function dropSchema(url: string, schema: string): Promise<void> {
  return withPostgres(url, 'public', async (db) => {
    await db.schema.dropSchema(schema).ifExists().cascade().execute();
  });
}

/**
 * The rows of `text` (no parameters) on a connection of its own to the store at `target`:
 * a SQLite file, or `schema` of the PostgreSQL at a URL.
 */
export async function rawQuery(
  target: string,
  schema: string | undefined,
  text: string,
): Promise<Record<string, unknown>[]> {
  if (schema !== undefined) {
    return withPostgres(target, schema, async (db) => {
      const { rows } = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text));
      return rows;
    });
  }
  const db = new BunDatabase(target);
  try {
    return db.query(text).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** The rows of `text` (placeholders `?N`) on a connection of its own to the SQLite file `path`. */
export function sqliteRows(
  path: string,
  text: string,
  parameters: readonly unknown[],
): Record<string, unknown>[] {
  const db = new BunDatabase(path, { readonly: true });
  try {
    return db.query(text).all(...(parameters as never[])) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** The server's current WAL position at `url` (a text LSN, for {@link walBytesSince}). */
export async function walPosition(url: string): Promise<string> {
  const rows = await rawQuery(url, 'public', 'SELECT pg_current_wal_lsn()::text AS lsn');
  return String(rows[0]?.lsn);
}

/** Bytes of WAL the server at `url` wrote since the position `lsn`, every session's. */
export async function walBytesSince(url: string, lsn: string): Promise<number> {
  // `lsn` is the server's own text (walPosition), never a caller's.
  const rows = await rawQuery(
    url,
    'public',
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '${lsn}'::pg_lsn)::text AS n`,
  );
  return Number(rows[0]?.n);
}
