import { Database } from 'bun:sqlite';
import { existsSync } from 'node:fs';
import { connectFailure } from './driver/postgres/errors.ts';
import { assertSchemaName, DEFAULT_SCHEMA } from './driver/postgres/schema-name.ts';
import { connectionSettings } from './driver/postgres/url.ts';
import { type IdPolicy, LESSON_POLICY, parseIdPolicy } from './input/id-policy.ts';
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

/**
 * The event id policy recorded in the store at `target` (`lesson` when there is no
 * store yet, the policy a new store is created with), read the same way as
 * {@link probeSchemaVersion}: nothing is created, migrated or locked. A caller that
 * validates a batch before opening the store uses it to name every event id the store
 * would refuse. Rejects like {@link probeSchemaVersion} when the store cannot be read.
 */
export async function probeIdPolicy(target: string, options: ProbeOptions = {}): Promise<IdPolicy> {
  const text = isPostgresUrl(target)
    ? await withPostgresProbe(target, options.schema ?? DEFAULT_SCHEMA, async (client, schema) => {
        if (!(await postgresTableExists(client, `${schema}.onceq_meta`))) return null;
        const { rows } = await client.query<{ value: string }>(
          `SELECT value FROM ${schema}.onceq_meta WHERE key = 'id_policy'`,
        );
        return rows[0]?.value ?? null;
      })
    : withSqliteProbe(target, 'onceq_meta', (db) => {
        const row = db
          .query<{ value: string }, []>("SELECT value FROM onceq_meta WHERE key = 'id_policy'")
          .get();
        return row?.value ?? null;
      });
  return text === null ? LESSON_POLICY : parseIdPolicy(text);
}

function sqliteMigrationNames(path: string): string[] | null {
  return withSqliteProbe(path, 'onceq_migrations', (db) =>
    db
      .query<{ name: string }, []>('SELECT name FROM onceq_migrations')
      .all()
      .map((r) => r.name),
  );
}

/** `read` on the SQLite file opened read-only, or null when it or `table` does not exist. */
function withSqliteProbe<T>(path: string, table: string, read: (db: Database) => T): T | null {
  if (path === ':memory:' || !existsSync(path)) return null;
  const db = new Database(path, { readonly: true });
  try {
    const found = db
      .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(table);
    return found === null ? null : read(db);
  } finally {
    db.close();
  }
}

function postgresMigrationNames(url: string, schema: string): Promise<string[] | null> {
  return withPostgresProbe(url, schema, async (client, name) => {
    if (!(await postgresTableExists(client, `${name}.onceq_migrations`))) return null;
    const { rows } = await client.query<{ name: string }>(
      `SELECT name FROM ${name}.onceq_migrations`,
    );
    return rows.map((r) => r.name);
  });
}

type ProbeClient = import('pg').Client;

/**
 * `read` on one plain connection to `url`; `schema` is validated first, so `read` may
 * interpolate it. A refused connection rejects without the password.
 */
async function withPostgresProbe<T>(
  url: string,
  schema: string,
  read: (client: ProbeClient, schema: string) => Promise<T>,
): Promise<T> {
  assertSchemaName(schema);
  const { ClosingClient } = await import('./driver/postgres/closing-client.ts');
  const client = new ClosingClient({
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
    return await read(client, schema);
  } finally {
    await client.end().catch(() => {});
  }
}

async function postgresTableExists(client: ProbeClient, name: string): Promise<boolean> {
  const found = await client.query<{ present: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [name],
  );
  return found.rows[0]?.present === true;
}
