import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { systemClock } from '../../clock.ts';
import { StoreUnavailableError } from '../../errors.ts';
import { migrateToLatest } from '../../migrations/index.ts';
import type { Database } from '../../schema.ts';
import { DEFAULT_PROTOCOL } from '../../types.ts';
import type { OpenStoreOptions, Store } from '../backend.ts';
import { type SlotValues, type Statement, StatementCache } from '../prepared.ts';
import { completionTx, withSavepoint } from './completion-tx.ts';
import { guardConnectionLoss } from './connection-loss.ts';
import { connectFailure, isRetryable } from './errors.ts';
import { listenForWake } from './listen.ts';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.ts';
import { postgresStatements } from './statements.ts';
import { describeTarget, InvalidPostgresUrl, parseTarget, redactUrl, scrub } from './url.ts';

export { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.ts';

/** Connections per store. Each onceq operation uses one at a time; migrations use two. */
const POOL_SIZE = 4;

/** How often a transaction is re-run after a deadlock, serialization or unique-key race. */
const MAX_TRANSACTION_ATTEMPTS = 5;

/** int8 (count, sum of integer, BIGINT seconds) and numeric (sum of bigint) as JS numbers. */
const NUMBER_OIDS = new Set([20, 1700]);
const parseNumber = (value: string) => Number(value);
/** The driver asks for a parser per column of every result: one shared function, no closure per call. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    NUMBER_OIDS.has(oid) && format !== 'binary'
      ? parseNumber
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Opens a PostgreSQL store through Kysely's `PostgresDialect` on a small `pg` pool and
 * applies pending migrations in `options.schema` (default `onceq`, created if missing).
 * Every connection runs with `search_path` set to that schema, so the protocol's
 * unqualified table names resolve there and other schemas are left alone.
 *
 * Transactions are READ COMMITTED: a fenced `UPDATE … WHERE state … AND generation …`
 * that waited for a row lock re-checks its `WHERE` against the committed row, and claim
 * locks its picks with `FOR UPDATE SKIP LOCKED`, so concurrent claimers skip each other.
 *
 * A connection failure is a {@link StoreUnavailableError} naming host, port and
 * database, never the password; {@link Store.location} is the URL with `***` for it.
 */
export async function openPostgresStore(
  url: string,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  assertSchemaName(schema);
  const { connectionString, startupOptions } = withSearchPath(url, schema);

  const pool = new pg.Pool({
    connectionString,
    options: startupOptions,
    types,
    max: POOL_SIZE,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 10_000,
    application_name: 'onceq',
    // A store that is never closed must not keep the process alive.
    allowExitOnIdle: true,
  });
  // A connection the server drops (idle or checked out) must never crash the process
  // with a stack: the next query on it reports one sentence instead.
  const guard = guardConnectionLoss(pool, url);

  let probe: pg.PoolClient;
  try {
    probe = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => {});
    throw connectFailure(error, url);
  }

  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: guard.kyselyPool }) });
  try {
    await prepareSchema(db, probe, schema, url);
  } catch (error) {
    probe.release();
    await db.destroy().catch(() => {});
    throw guard.mapError(error, probe);
  }
  probe.release();

  let retries = 0;
  const capabilities = { skipLocked: true, maxParameters: 65_535 };
  const cache = new StatementCache(db, capabilities);
  const writeTransaction: Store['writeTransaction'] = async (fn) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.transaction().execute(fn);
      } catch (error) {
        if (attempt < MAX_TRANSACTION_ATTEMPTS && isRetryable(error)) {
          retries++;
          continue;
        }
        throw guard.mapError(error);
      }
    }
  };
  /** Runs one compiled statement as a named (server-side prepared) statement. */
  const run = (
    client: pg.PoolClient,
    statement: Statement<unknown>,
    values: SlotValues,
    arity: number,
  ) => {
    const compiled = cache.get(statement, arity);
    const parameters = compiled.bind(values);
    options.onQuery?.(compiled.sql, parameters);
    return client.query({ name: compiled.name, text: compiled.sql, values: parameters });
  };
  /** Runs `body` on one pooled client, again after a deadlock, serialization or unique race. */
  const onClient = async <T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw guard.mapError(error);
      }
      try {
        return await body(client);
      } catch (error) {
        if (attempt < MAX_TRANSACTION_ATTEMPTS && isRetryable(error)) {
          retries++;
          continue;
        }
        throw guard.mapError(error, client);
      } finally {
        client.release();
      }
    }
  };
  /**
   * The hot path: one pooled client, BEGIN … COMMIT, and the protocol's statements as
   * named statements, so the server parses and plans each once per connection and no
   * query builder or executor runs per message. Same retry rules as writeTransaction.
   */
  const transact: Store['transact'] = (fn) =>
    onClient(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await fn({
          rows: async (statement, values, arity = 1) =>
            (await run(client, statement as Statement<unknown>, values, arity)).rows as never[],
          changes: async (statement, values, arity = 1) =>
            (await run(client, statement, values, arity)).rowCount ?? 0,
          savepoint: (body) => withSavepoint(client, body),
          completionTx: () => completionTx(client, options.onQuery),
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  /** One statement, no BEGIN/COMMIT: PostgreSQL runs it as its own transaction. */
  const autocommit: Store['autocommit'] = (statement, values, arity = 1) =>
    onClient(
      async (client) =>
        (await run(client, statement as Statement<unknown>, values, arity)).rows as never[],
    );
  return {
    kind: 'postgres',
    db,
    capabilities,
    statements: postgresStatements,
    clock: options.clock ?? systemClock,
    protocol: { ...DEFAULT_PROTOCOL, ...options.protocol },
    location: redactUrl(url),
    writeTransaction,
    transact,
    autocommit,
    busyRetries: () => retries,
    listen: (onWake, onError) =>
      listenForWake({ connectionString, options: startupOptions }, schema, url, onWake, onError),
    close: () => db.destroy(),
  };
}

/**
 * Creates the schema if missing and applies pending migrations, serialized across
 * processes by a session advisory lock on `probe` (keyed by the schema name): two
 * processes opening a fresh schema at the same moment never race on `CREATE SCHEMA`
 * or on the migration tables. Kysely's Migrator takes its own lock on top.
 */
async function prepareSchema(
  db: Kysely<Database>,
  probe: pg.PoolClient,
  schema: string,
  url: string,
): Promise<void> {
  const key = `onceq.migrate.${schema}`;
  await probe.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
  try {
    const exists = await probe.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) {
      try {
        // The name was validated by assertSchemaName: safe to interpolate.
        await probe.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      } catch (error) {
        throw new StoreUnavailableError(
          `cannot create schema ${schema} in PostgreSQL at ${describeTarget(url)}: ${scrub((error as Error).message, url)}`,
          { cause: error },
        );
      }
    }
    await migrateToLatest(db as Kysely<unknown>, 'postgres', schema);
    // Fail here, not at the first claim, if the tables did not land in `schema`.
    await sql`SELECT 1 FROM messages LIMIT 0`.execute(db);
  } finally {
    await probe.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => {});
  }
}

/**
 * The URL for the driver, and the startup `options` that set `search_path`. The driver
 * lets a URL's own `options=` parameter override the config, so it is folded in here.
 */
function withSearchPath(
  url: string,
  schema: string,
): { connectionString: string; startupOptions: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
    parseTarget(url);
  } catch {
    throw new InvalidPostgresUrl(url);
  }
  const own = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  const searchPath = `-c search_path=${schema}`;
  return {
    connectionString: own === null ? url : parsed.toString(),
    startupOptions: own === null ? searchPath : `${own} ${searchPath}`,
  };
}
