import { Database } from 'bun:sqlite';
import { existsSync } from 'node:fs';
import { connectFailure } from './driver/postgres/errors.ts';
import { assertSchemaName, DEFAULT_SCHEMA } from './driver/postgres/schema-name.ts';
import { connectionSettings } from './driver/postgres/url.ts';
import { versionOf } from './migrations/index.ts';
import { isPostgresUrl } from './target.ts';

export { SCHEMA_VERSION } from './migrations/index.ts';

/** Which schema a PostgreSQL store lives in. Default {@link DEFAULT_SCHEMA} (`onceq`). */
export interface ProbeOptions {
  schema?: string;
}

/**
 * The schema version of the store at `target` (the number of its newest applied
 * migration), read **without opening it as a store**: nothing is created, migrated or
 * locked. `openStore` would create a missing SQLite file or PostgreSQL schema and apply
 * migrations, which `onceq --version` must never do.
 *
 * Resolves to null when there is no store there: no such file, no such schema, or no
 * migrations table. A store that cannot be read (unreachable server, unreadable file)
 * rejects (PostgreSQL: a `StoreUnavailableError` without the password); the caller
 * decides what to say.
 */
export async function probeSchemaVersion(
  target: string,
  options: ProbeOptions = {},
): Promise<number | null> {
  const names = isPostgresUrl(target)
    ? await postgresMigrationNames(target, options.schema ?? DEFAULT_SCHEMA)
    : sqliteMigrationNames(target);
  return names === null || names.length === 0 ? null : versionOf(names);
}

function sqliteMigrationNames(path: string): string[] | null {
  if (path === ':memory:' || !existsSync(path)) return null;
  const db = new Database(path, { readonly: true });
  try {
    const table = db
      .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'onceq_migrations'")
      .get();
    if (table === null) return null;
    return db
      .query<{ name: string }, []>('SELECT name FROM onceq_migrations')
      .all()
      .map((r) => r.name);
  } finally {
    db.close();
  }
}

async function postgresMigrationNames(url: string, schema: string): Promise<string[] | null> {
  assertSchemaName(schema);
  const { default: pg } = await import('pg');
  const client = new pg.Client({
    ...connectionSettings(url).driver,
    connectionTimeoutMillis: 10_000,
    application_name: 'onceq',
  });
  // A server that drops the connection must not crash the process with a stack.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw connectFailure(error, url);
  }
  try {
    const found = await client.query<{ present: boolean }>(
      'SELECT to_regclass($1) IS NOT NULL AS present',
      [`${schema}.onceq_migrations`],
    );
    if (found.rows[0]?.present !== true) return null;
    // The name was validated by assertSchemaName: safe to interpolate.
    const { rows } = await client.query<{ name: string }>(
      `SELECT name FROM ${schema}.onceq_migrations`,
    );
    return rows.map((r) => r.name);
  } finally {
    await client.end().catch(() => {});
  }
}
