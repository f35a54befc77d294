import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type PostgresDialectConfig,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/**
 * How onceq names its schema without session state, so one statement means the same
 * thing on a direct connection and behind a pooler that hands each transaction another
 * server connection (PgBouncer in transaction mode):
 *
 * - onceq's own statements name their tables `schema.table` (the store's SQL dialect,
 *   driver/sql-text.ts);
 * - everything that runs through Kysely (migrations, maintenance, doctor) runs in a
 *   transaction that opens with `SET LOCAL search_path` and `SET LOCAL lock_timeout`
 *   ({@link SchemaScopedDialect}): both end with the transaction, nothing is left on a
 *   pooled server connection, and no lock wait lasts longer than {@link LOCK_TIMEOUT_MS}.
 */

/** The longest any onceq transaction run through Kysely waits for a lock, ms. */
export const LOCK_TIMEOUT_MS = 30_000;

/** The statement that opens every Kysely transaction (the schema name is validated). */
function beginScoped(schema: string): CompiledQuery {
  return CompiledQuery.raw(
    `BEGIN; SET LOCAL search_path TO ${schema}; SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`,
  );
}

/** Kysely's PostgreSQL dialect, every transaction scoped to `schema`. */
export class SchemaScopedDialect extends PostgresDialect {
  readonly #schema: string;
  constructor(config: PostgresDialectConfig, schema: string) {
    super(config);
    this.#schema = schema;
  }
  override createDriver(): Driver {
    return new SchemaScopedDriver(super.createDriver(), this.#schema);
  }
}

class ScopedConnection implements DatabaseConnection {
  inTransaction = false;
  constructor(
    readonly inner: DatabaseConnection,
    readonly schema: string,
  ) {}
  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction) return this.inner.executeQuery<R>(query);
    // A statement outside a transaction gets one of its own, scoped like any other.
    await this.inner.executeQuery(beginScoped(this.schema));
    try {
      const result = await this.inner.executeQuery<R>(query);
      await this.inner.executeQuery(CompiledQuery.raw('COMMIT'));
      return result;
    } catch (error) {
      await this.inner.executeQuery(CompiledQuery.raw('ROLLBACK')).catch(() => {});
      throw error;
    }
  }
  streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

class SchemaScopedDriver implements Driver {
  constructor(
    readonly inner: Driver,
    readonly schema: string,
  ) {}
  init(): Promise<void> {
    return this.inner.init();
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return new ScopedConnection(await this.inner.acquireConnection(), this.schema);
  }
  async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    const scoped = connection as ScopedConnection;
    if (settings.isolationLevel || settings.accessMode) {
      await this.inner.beginTransaction(scoped.inner, settings);
      await scoped.inner.executeQuery(
        CompiledQuery.raw(
          `SET LOCAL search_path TO ${this.schema}; SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`,
        ),
      );
    } else {
      await scoped.inner.executeQuery(beginScoped(this.schema));
    }
    scoped.inTransaction = true;
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const scoped = connection as ScopedConnection;
    scoped.inTransaction = false;
    await this.inner.commitTransaction(scoped.inner);
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const scoped = connection as ScopedConnection;
    scoped.inTransaction = false;
    await this.inner.rollbackTransaction(scoped.inner);
  }
  savepoint: Driver['savepoint'] = (connection, name, compile) =>
    this.inner.savepoint?.((connection as ScopedConnection).inner, name, compile) ??
    Promise.resolve();
  rollbackToSavepoint: Driver['rollbackToSavepoint'] = (connection, name, compile) =>
    this.inner.rollbackToSavepoint?.((connection as ScopedConnection).inner, name, compile) ??
    Promise.resolve();
  releaseSavepoint: Driver['releaseSavepoint'] = (connection, name, compile) =>
    this.inner.releaseSavepoint?.((connection as ScopedConnection).inner, name, compile) ??
    Promise.resolve();
  releaseConnection(connection: DatabaseConnection): Promise<void> {
    const scoped = connection as ScopedConnection;
    scoped.inTransaction = false;
    return this.inner.releaseConnection(scoped.inner);
  }
  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
