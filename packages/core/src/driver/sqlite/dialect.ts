import type { Database as BunDatabase, Statement } from 'bun:sqlite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { StoreBusyError } from '../../errors.ts';
import { asStorageError } from './storage.ts';

/**
 * A Kysely dialect for `bun:sqlite`, written for onceq's write pattern:
 *
 * - every transaction starts with `BEGIN IMMEDIATE`, so the write lock is taken
 *   **before** the first read (a deferred `BEGIN` would let two claimers read the same
 *   ready row and one of them fail on upgrade);
 * - prepared statements are cached by SQL text and finalized on destroy, so a closed
 *   store leaves no `-wal` file behind;
 * - `SQLITE_BUSY` on `BEGIN IMMEDIATE` and on autocommit statements is retried with
 *   jittered backoff up to `busyTimeoutMs`, instead of SQLite's own sleep schedule,
 *   which starves a second process.
 */
export interface BunSqliteDialectConfig {
  database: BunDatabase;
  /** How long to keep retrying a busy database before giving up. */
  busyTimeoutMs: number;
  /** Printable location, for the busy error. */
  location: string;
}

export class BunSqliteDialect implements Dialect {
  /** The one connection of this store; its `busy` counters are public. */
  readonly connection: BunSqliteConnection;
  constructor(config: BunSqliteDialectConfig) {
    this.connection = new BunSqliteConnection(config);
  }
  createDriver(): Driver {
    return new BunSqliteDriver(this.connection);
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

/** SQLite runs DDL inside transactions fine; saying so makes Kysely's Migrator atomic. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** Contention statistics, read by the worker loop to yield to a competing process. */
export interface BusyStats {
  /** Retries after SQLITE_BUSY since the store was opened. */
  retries: number;
}

class BunSqliteDriver implements Driver {
  #connection: BunSqliteConnection | undefined;
  constructor(connection: BunSqliteConnection) {
    this.#connection = connection;
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#connection === undefined) throw new Error('the SQLite store is closed');
    // The same lock guards the prepared-statement path (`BunSqliteConnection.transact`).
    await this.#connection.lock.acquire();
    return this.#connection;
  }
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as BunSqliteConnection).begin();
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as BunSqliteConnection).exec('COMMIT');
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as BunSqliteConnection).rollback();
  }
  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as BunSqliteConnection).lock.release();
  }
  async destroy(): Promise<void> {
    this.#connection?.close();
    this.#connection = undefined;
  }
}

/** A prepared statement of the connection's cache. */
interface Prepared {
  readonly statement: Statement;
  readonly returnsRows: boolean;
}

const SQLITE_BUSY = /SQLITE_BUSY|database is locked/;

function isBusy(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) || SQLITE_BUSY.test(error.message)
  );
}

export class BunSqliteConnection implements DatabaseConnection {
  readonly #db: BunDatabase;
  readonly #busyTimeoutMs: number;
  readonly #location: string;
  readonly #statements = new Map<string, Prepared>();
  #inTransaction = false;
  readonly busy: BusyStats = { retries: 0 };
  /** Runs `BEGIN IMMEDIATE`: one closure per connection, not one per transaction. */
  readonly #beginImmediate = () => this.#prepare('BEGIN IMMEDIATE').run();
  /** One user of the connection at a time: Kysely queries or a {@link transact} block. */
  readonly lock = new Lock();

  constructor(config: BunSqliteDialectConfig) {
    this.#db = config.database;
    this.#busyTimeoutMs = config.busyTimeoutMs;
    this.#location = config.location;
  }

  /** `BEGIN IMMEDIATE`, waiting for the write lock while busy; `undefined` when it began at once. */
  begin(): Promise<void> | undefined {
    const begun = this.#retryBusy(this.#beginImmediate);
    if (begun instanceof Promise) {
      return begun.then(() => {
        this.#inTransaction = true;
      });
    }
    this.#inTransaction = true;
    return undefined;
  }

  /**
   * The hot path: one `BEGIN IMMEDIATE … COMMIT` in which `fn` runs compiled statements
   * directly on their cached prepared statements, bypassing Kysely's executor.
   * Rolls back and rethrows when `fn` throws.
   */
  async transact<T>(fn: () => Promise<T>): Promise<T> {
    // Uncontended, the lock and the BEGIN cost no promise (two transactions a message).
    if (!this.lock.tryAcquire()) await this.lock.acquire();
    try {
      const waiting = this.begin();
      if (waiting !== undefined) await waiting;
      try {
        const result = await fn();
        this.exec('COMMIT');
        return result;
      } catch (error) {
        this.rollback();
        throw error;
      }
    } catch (error) {
      throw asStorageError(error, this.#location);
    } finally {
      this.lock.release();
    }
  }

  /**
   * Runs `fn` holding the connection but no transaction: each statement it runs commits
   * by itself (`Store.read`).
   */
  async read<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.lock.tryAcquire()) await this.lock.acquire();
    try {
      return await fn();
    } catch (error) {
      throw asStorageError(error, this.#location);
    } finally {
      this.lock.release();
    }
  }

  /**
   * {@link run}, retried while the database is busy when no transaction is open (inside
   * `BEGIN IMMEDIATE` the write lock is ours: nothing there can be busy).
   */
  runRetrying(sql: string, parameters: unknown[]): Promise<{ rows: unknown[]; changes: number }> {
    // One promise, not two, for a statement of the hot path (enqueue's INSERT, extend);
    // inside `BEGIN IMMEDIATE` no retry. A refused statement is a rejection, as from an
    // async function.
    try {
      const run = () => this.run(sql, parameters);
      return Promise.resolve(this.#inTransaction ? run() : this.#retryBusy(run));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The cached prepared statement of `sql`, for hand-written SQL (`SqliteExecutor`). */
  statement(sql: string): Statement {
    return this.#prepared(sql).statement;
  }

  /** Runs one compiled statement inside {@link transact}: rows when it returns any, else changes. */
  run(sql: string, parameters: unknown[]): { rows: unknown[]; changes: number } {
    const { statement, returnsRows } = this.#prepared(sql);
    if (returnsRows) return { rows: statement.all(...(parameters as never[])), changes: 0 };
    return { rows: [], changes: statement.run(...(parameters as never[])).changes };
  }

  exec(sql: string): void {
    this.#prepare(sql).run();
    if (sql === 'COMMIT') this.#inTransaction = false;
  }

  rollback(): void {
    this.#inTransaction = false;
    // A failed COMMIT or an I/O error may already have ended the transaction.
    try {
      if (this.#db.inTransaction) this.#prepare('ROLLBACK').run();
    } catch (error) {
      // The storage failed the ROLLBACK too: SQLite undoes the transaction from its
      // journal on the next open; the error that made us roll back is the one to report.
      if (asStorageError(error, this.#location) === error) throw error;
    }
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const run = () => this.#execute<R>(compiled);
    try {
      // Inside BEGIN IMMEDIATE we own the write lock: nothing there can be busy.
      return this.#inTransaction ? run() : await this.#retryBusy(run);
    } catch (error) {
      throw asStorageError(error, this.#location);
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not used by onceq; Kysely requires the method.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streamQuery is not supported by the onceq bun:sqlite dialect');
  }

  close(): void {
    for (const { statement } of this.#statements.values()) statement.finalize();
    this.#statements.clear();
    this.#db.close(false);
  }

  #prepare(sql: string): Statement {
    return this.#prepared(sql).statement;
  }

  /** The cached statement and whether it returns rows (read once: a native call each time). */
  #prepared(sql: string): Prepared {
    let prepared = this.#statements.get(sql);
    if (prepared === undefined) {
      const statement = this.#db.prepare(sql);
      prepared = { statement, returnsRows: statement.columnNames.length > 0 };
      this.#statements.set(sql, prepared);
    }
    return prepared;
  }

  #execute<R>(compiled: CompiledQuery): QueryResult<R> {
    const { statement, returnsRows } = this.#prepared(compiled.sql);
    const parameters = compiled.parameters as never[];
    if (returnsRows) {
      return { rows: statement.all(...parameters) as R[] };
    }
    const { changes, lastInsertRowid } = statement.run(...parameters);
    return {
      rows: [],
      numAffectedRows: BigInt(changes),
      insertId: BigInt(lastInsertRowid),
    };
  }

  /**
   * `operation`, retried while the database is busy: its result at once when it ran the
   * first time (no promise), else a promise of the retry's. A refusal other than busy is
   * thrown as it is.
   */
  #retryBusy<T>(operation: () => T): T | Promise<T> {
    try {
      return operation();
    } catch (error) {
      if (!isBusy(error)) throw error;
      return this.#retryAfterBusy(operation, error);
    }
  }

  async #retryAfterBusy<T>(operation: () => T, busy: unknown): Promise<T> {
    const deadline = performance.now() + this.#busyTimeoutMs;
    // Short ceilings keep a waiting process close to the lock: with SQLite's own
    // schedule (or a long cap) one of two workers gets almost none of the messages; a
    // 2 ms cap and the worker's step-aside share them (the fair-share benchmark).
    let ceilingMs = 0.5;
    let error = busy;
    for (;;) {
      if (performance.now() >= deadline) {
        throw new StoreBusyError(this.#location, this.#busyTimeoutMs, { cause: error });
      }
      this.busy.retries++;
      // Full jitter: two waiting processes do not wake in lockstep.
      await Bun.sleep(Math.random() * ceilingMs);
      ceilingMs = Math.min(ceilingMs * 2, 2);
      try {
        return operation();
      } catch (next) {
        if (!isBusy(next)) throw next;
        error = next;
      }
    }
  }
}

/** A FIFO lock whose uncontended acquire costs one resolved promise. */
class Lock {
  #held = false;
  readonly #waiters: (() => void)[] = [];
  /** Takes the lock if it is free; false when someone holds it (then {@link acquire}). */
  tryAcquire(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }
  acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#held = false;
    else next(); // ownership passes straight to the next waiter
  }
}
