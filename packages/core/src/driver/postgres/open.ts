import { Kysely, sql } from 'kysely';
import pg from 'pg';
import { type Clock, systemClock } from '../../clock.ts';
import { OnceqError, StoreUnavailableError } from '../../errors.ts';
import { MIGRATIONS, migrateToLatest } from '../../migrations/index.ts';
import type { Database } from '../../schema.ts';
import { DEFAULT_PROTOCOL } from '../../types.ts';
import type { OpenStoreOptions, Store, WakeListener } from '../backend.ts';
import { inCallerTransaction } from '../caller-transaction.ts';
import type { Executor } from '../executor.ts';
import { postgresDialect, type SqlText } from '../sql-text.ts';
import { postgresCallerRunner } from './caller-transaction.ts';
import { completionTx, withSavepoint } from './completion-tx.ts';
import { guardConnectionLoss } from './connection-loss.ts';
import {
  connectFailure,
  isLostPreparedStatement,
  isRetryable,
  isServerBusy,
  mapQueryError,
  POOL_WAIT_MS,
} from './errors.ts';
import { listenForWake } from './listen.ts';
import { ConnectionPool } from './pool.ts';
import { refusalPauseMs } from './refusal-pause.ts';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.ts';
import { LOCK_TIMEOUT_MS, SchemaScopedDialect } from './schema-scope.ts';
import { postgresDriver, WAKE_CHANNEL } from './statements.ts';
import { connectionSettings, describeTarget, redactUrl, scrub } from './url.ts';

export { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.ts';

/**
 * Pooled connections per store by default (a producer, a console, a library caller); a
 * worker sets its own from its concurrency ({@link Store.sizePool}). `?pool_max=` on the
 * URL fixes it. The pool opens connections on demand and keeps only one while idle.
 */
export const DEFAULT_POOL_MAX = 2;

/** How long a connection beyond the first stays open unused, ms. */
const IDLE_CLOSE_MS = 10_000;

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
 *
 * No session state, so the store works the same on a direct connection, behind a pooler
 * in session mode, and behind one in transaction mode (PgBouncer `pool_mode =
 * transaction`): no startup `options`, the hot path's statements name `schema.table`,
 * and every other transaction sets its `search_path` and `lock_timeout` with `SET LOCAL`
 * (schema-scope.ts). The hot path runs named prepared statements while the server keeps
 * them; the first time one is missing (a pooler handed over another server connection)
 * the store switches to unnamed statements for good.
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
  const settings = connectionSettings(url);

  const pool = new ConnectionPool({
    config: {
      ...settings.driver,
      types,
      connectionTimeoutMillis: POOL_WAIT_MS,
      application_name: 'onceq',
    },
    max: settings.poolMax ?? DEFAULT_POOL_MAX,
    waitMs: POOL_WAIT_MS,
    idleMs: IDLE_CLOSE_MS,
  });
  // A connection the server drops (idle or checked out) must never crash the process
  // with a stack: the next query on it reports one sentence instead.
  const guard = guardConnectionLoss(pool, url);

  let probe: pg.PoolClient;
  try {
    probe = await firstConnection(pool, url, options.waitForConnection);
  } catch (error) {
    await pool.end().catch(() => {});
    throw connectFailure(error, url);
  }

  const db = new Kysely<Database>({
    dialect: new SchemaScopedDialect({ pool: guard.kyselyPool }, schema),
  });
  let migrate: boolean;
  try {
    migrate = await prepareSchema(
      probe,
      schema,
      url,
      options.readOnly === true,
      options.mustExist === true,
    );
  } catch (error) {
    probe.release();
    await db.destroy().catch(() => {});
    throw guard.mapError(error, probe);
  }
  probe.release();
  // After the probe is back in the pool: the migrations run through it, and with
  // `?pool_max=1` it is the only connection there is.
  if (migrate) {
    try {
      await migrateToLatest(db as Kysely<unknown>, 'postgres', schema);
      // Fail here, not at the first claim, if the tables did not land in `schema`.
      await sql`SELECT 1 FROM ${sql.table(`${schema}.messages`)} LIMIT 0`.execute(db);
    } catch (error) {
      await db.destroy().catch(() => {});
      throw guard.mapError(error);
    }
  }
  // The system clock means "now" on a real deployment: then every statement reads the
  // server's clock itself (the dialect's now, sql-text.ts), so hosts whose clocks
  // disagree agree on every lease, backoff and fence. A model clock or `--now` (tests, the lab) is bound into
  // the statements as given. `store.clock` stays the host's, for what onceq only shows.
  const clock: Clock = options.clock ?? systemClock;
  const modelClock = clock !== systemClock;

  let retries = 0;
  // Every statement names `schema.table` (no search_path) and reads the clock as above.
  const dialect = postgresDialect(schema, modelClock);
  /** False once the server (or a pooler in front of it) lost a named statement. */
  let named = true;
  /**
   * An executor on one checked-out client: its statements run in whatever it has open.
   * A {@link SqlText} runs as a named statement (parsed and planned once per server
   * connection) while the server keeps them, unless it asks to be planned at each run
   * ({@link SqlText.replan}).
   */
  const executorOn = (client: pg.PoolClient): Executor => ({
    dialect,
    query: async <Row>(statement: SqlText | string, parameters: readonly unknown[] = []) => {
      const text = typeof statement === 'string' ? statement : statement.sql;
      options.onQuery?.(text, parameters);
      const values = parameters as unknown[];
      const result = await client.query(
        named && typeof statement !== 'string' && statement.replan !== true
          ? { name: statement.name, text, values }
          : { text, values },
      );
      return { rows: result.rows as Row[], changes: result.rowCount ?? 0 };
    },
    savepoint: (body) => withSavepoint(client, body),
    completionTx: () => completionTx(client, options.onQuery),
  });
  /** Runs `body` on one pooled client, again after a deadlock, serialization or unique race. */
  const onClient = async <T>(
    body: (client: pg.PoolClient) => Promise<T>,
    urgent = false,
  ): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect(urgent);
      } catch (error) {
        throw guard.mapError(error);
      }
      const usedNames = named;
      try {
        return await body(client);
      } catch (error) {
        // The statement did not run (nothing was written): run it again, unnamed. Another
        // call in flight may have switched first: that one's error counts the same.
        if (usedNames && isLostPreparedStatement(error)) {
          named = false;
          attempt--;
          continue;
        }
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
   * query builder or executor runs per message. Retried like every transaction here.
   */
  const transact: Store['transact'] = (fn, within, transactOptions) => {
    if (within !== undefined) {
      return inCallerTransaction(postgresCallerRunner(within), dialect, fn, options.onQuery);
    }
    return onClient((client) => inTransaction(client, fn), transactOptions?.urgent === true);
  };
  /**
   * `fn` between BEGIN and COMMIT on `client`. The `search_path` is left as the connection
   * has it: onceq's statements name `schema.table`, and a user's (a completion's
   * `tx.query`, `tx.db` and `insert` rows, a `transaction`'s) resolve unqualified names
   * the way any other statement on that connection does.
   */
  const inTransaction = async <T>(client: pg.PoolClient, fn: (x: Executor) => Promise<T>) => {
    await client.query('BEGIN');
    try {
      const result = await fn(executorOn(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };
  return {
    kind: 'postgres',
    driver: postgresDriver,
    clock,
    protocol: { ...DEFAULT_PROTOCOL, ...options.protocol },
    location: redactUrl(url),
    schema,
    transact,
    // No BEGIN: each statement is a transaction of its own (a claim, a money ACK: one
    // round trip each).
    read: (fn) => onClient((client) => fn(executorOn(client))),
    busyRetries: () => retries,
    sizePool(connections) {
      if (settings.poolMax === undefined) pool.max = Math.max(1, connections);
    },
    connections: {
      use: () => pool.use(),
      spare: () => pool.spare(),
      onShort: (fn) => pool.onShort(fn),
    },
    listen: (onWake, onError) => listenOn(pool, url, settings.listenUrl, schema, onWake, onError),
    close: async () => {
      await db.destroy();
      // Kysely ends the pool only if its own connection was ever used, which an
      // up-to-date schema (no migration to run) never does: end it here as well.
      await pool.end();
    },
  };
}

/**
 * Makes sure `schema` holds this build's tables. An up-to-date schema is one read and no
 * lock. Otherwise (a new or older schema) one transaction creates the schema under a
 * transaction-scoped advisory lock (keyed by the schema name; two processes opening a
 * fresh schema at once never race on `CREATE SCHEMA`), and Kysely's Migrator applies
 * the pending migrations in one more under its own transaction-scoped lock. No lock
 * outlives its transaction, so none is left on a server connection a pooler keeps, and
 * every wait is bounded by `lock_timeout`.
 *
 * `readOnly` (status, show, list, dlq): a missing or older schema is refused, nothing
 * is created. `mustExist` (redrive, fail): a missing schema is refused, an older one is
 * migrated. Returns whether migrations are pending: the caller runs them once the probe
 * is released, so an open never needs two connections at once.
 */
async function prepareSchema(
  probe: pg.PoolClient,
  schema: string,
  url: string,
  readOnly: boolean,
  mustExist: boolean,
): Promise<boolean> {
  // On the probe's connection: an open uses one connection, not two.
  const applied = await probe.query<{ present: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [`${schema}.onceq_migrations`],
  );
  if (applied.rows[0]?.present === true) {
    const { rows } = await probe.query<{ name: string }>(
      `SELECT name FROM ${schema}.onceq_migrations`,
    );
    const names = new Set(rows.map((row) => row.name));
    if (MIGRATIONS.every((migration) => names.has(migration.name))) return false;
  }
  if (mustExist && applied.rows[0]?.present !== true) {
    throw new OnceqError(
      'no_store',
      2,
      `no onceq store in schema ${schema} of PostgreSQL at ${describeTarget(url)}: nothing was created; enqueue or work creates it`,
    );
  }
  if (readOnly) {
    throw new OnceqError(
      'no_store',
      2,
      applied.rows[0]?.present !== true
        ? `no onceq store in schema ${schema} of PostgreSQL at ${describeTarget(url)}: nothing was created; enqueue or work creates it`
        : `the onceq store in schema ${schema} of PostgreSQL at ${describeTarget(url)} is older than this onceq: run a write command (enqueue, work) once to migrate it`,
    );
  }
  await probe.query(
    `BEGIN; SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}; SELECT pg_advisory_xact_lock(hashtext('onceq.migrate.${schema}'))`,
  );
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
    await probe.query('COMMIT');
  } catch (error) {
    await probe.query('ROLLBACK').catch(() => {});
    throw error;
  }
  return true;
}

/**
 * Wake-ups for a worker ({@link listenForWake}). Without `?listen_url=`, LISTEN rides on
 * one of the store's own pooled connections and the probe goes out on a connection of
 * its own, closed at once (through a pooler in transaction mode that one lands on the
 * server connection that ran the LISTEN and hears it itself, so the listener is rightly
 * found deaf); if the server refuses that extra connection, the probe goes through the
 * pool. With `?listen_url=`, a pool of one connection to that URL listens and the probe
 * goes through the store's pool.
 */
async function listenOn(
  pool: ConnectionPool,
  url: string,
  listenUrl: string,
  schema: string,
  onWake: () => void,
  onError: (error: Error) => void,
): Promise<WakeListener> {
  const notify = (client: pg.Client | ConnectionPool, payload: string) =>
    client.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, payload]).then(() => undefined);
  if (listenUrl === url) {
    const probe = async (payload: string) => {
      const client = new pg.Client({ ...pool.options, application_name: 'onceq-probe' });
      client.on('error', () => {});
      try {
        await client.connect();
      } catch {
        await client.end().catch(() => {});
        return notify(pool, payload);
      }
      try {
        await notify(client, payload);
      } finally {
        await client.end().catch(() => {});
      }
    };
    try {
      return await listenForWake(pool, schema, describeTarget(url), probe, onWake, onError);
    } catch (error) {
      throw error instanceof Error && error.message.startsWith('LISTEN')
        ? error
        : mapQueryError(error, url);
    }
  }
  const own = new ConnectionPool({
    config: { ...connectionSettings(listenUrl).driver, application_name: 'onceq-listen' },
    max: 1,
    waitMs: POOL_WAIT_MS,
    idleMs: IDLE_CLOSE_MS,
  });
  own.whenConnected((client) => client.on('error', () => {}));
  try {
    const listener = await listenForWake(
      own,
      schema,
      describeTarget(listenUrl),
      (payload) => notify(pool, payload),
      onWake,
      onError,
    );
    return {
      live: listener.live,
      close: async () => {
        await listener.close();
        await own.end();
      },
    };
  } catch (error) {
    await own.end().catch(() => {});
    throw error instanceof Error && error.message.startsWith('LISTEN')
      ? error
      : connectFailure(error, listenUrl);
  }
}

/**
 * The store's first connection. With `wait` (a worker), a server that has no connection
 * to give now ({@link isServerBusy}) is asked again after a pause that grows with each
 * refusal, and `wait.onWait` hears the first refusal once; any other failure (wrong
 * host, password, certificate) throws at once, as it does without `wait`.
 */
async function firstConnection(
  pool: ConnectionPool,
  url: string,
  wait: OpenStoreOptions['waitForConnection'],
): Promise<pg.PoolClient> {
  for (let refusals = 0; ; refusals++) {
    try {
      return await pool.connect();
    } catch (error) {
      if (wait === undefined || !isServerBusy(error)) throw error;
      const pauseMs = refusalPauseMs(refusals);
      if (refusals === 0) {
        wait.onWait(
          `${connectFailure(error, url).message}; waiting for a free connection, trying again every ${pauseMs / 1000} s and less often up to every ${refusalPauseMs(Number.MAX_SAFE_INTEGER) / 1000} s (see the connection budget in docs/postgres.md)`,
        );
      }
      await Bun.sleep(pauseMs);
    }
  }
}
