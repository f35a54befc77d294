import type { SQLQueryBindings, Statement as SqliteStatement } from 'bun:sqlite';
import { type Kysely, SqliteAdapter, SqliteQueryCompiler } from 'kysely';
import type { CompletionTx } from '../../handler/contract.ts';
import { boundKysely, CLOSED_TX } from '../bound-kysely.ts';
import type { Executor, QueryResult } from '../executor.ts';
import { type SqlText, sqliteDialect } from '../sql-text.ts';
import type { BunSqliteConnection } from './dialect.ts';

/** Called with every statement the store runs (`OpenStoreOptions.onQuery`). */
type OnQuery = (sql: string, parameters: readonly unknown[]) => void;

/**
 * The SQLite store's {@link Executor}: SQL with numbered `?N` placeholders, run on the
 * connection's cached `bun:sqlite` statements, inside the caller's `BEGIN IMMEDIATE`
 * transaction or (`Store.read`) with none. Besides {@link query}, a synchronous door for
 * the hot path ({@link all}, {@link get}, {@link run}): `sqlite/statements.ts` claims,
 * reads the fence, inserts effects and ACKs through it with no promise per statement.
 *
 * No `#private` fields: a test may wrap the executor with `Object.create(x)` and
 * override one method.
 */
export class SqliteExecutor implements Executor {
  readonly dialect = sqliteDialect;
  private readonly connection: BunSqliteConnection;
  private readonly onQuery: OnQuery | undefined;

  constructor(connection: BunSqliteConnection, onQuery?: OnQuery) {
    this.connection = connection;
    this.onQuery = onQuery;
  }

  query<Row>(
    statement: SqlText | string,
    parameters: readonly unknown[] = [],
  ): Promise<QueryResult<Row>> {
    const text = typeof statement === 'string' ? statement : statement.sql;
    this.onQuery?.(text, parameters);
    return this.connection.runRetrying(text, parameters as unknown[]) as Promise<QueryResult<Row>>;
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    this.connection.exec('SAVEPOINT onceq_completion');
    try {
      const result = await fn();
      this.connection.exec('RELEASE onceq_completion');
      return result;
    } catch (error) {
      this.connection.exec('ROLLBACK TO onceq_completion');
      this.connection.exec('RELEASE onceq_completion');
      throw error;
    }
  }

  completionTx(): { tx: CompletionTx; close(): void } {
    const { connection, onQuery } = this;
    let open = true;
    // biome-ignore lint/suspicious/noExplicitAny: the user's own tables, typed by the user.
    let db: Kysely<any> | undefined;
    const tx: CompletionTx = {
      kind: 'sqlite',
      async query(sql, params = []) {
        if (!open) throw new Error(CLOSED_TX);
        onQuery?.(sql, params);
        const { rows, changes } = connection.run(sql, [...params]);
        return { rows: rows as Record<string, unknown>[], rowCount: rows.length || changes };
      },
      get db() {
        db ??= boundKysely(SQLITE_DIALECT, connection, () => open);
        return db;
      },
    };
    return { tx, close: () => (open = false) };
  }

  /** The rows of a hand-written statement, `parameters` bound in `?N` order. */
  all<Row>(statement: SqlText, parameters: readonly SQLQueryBindings[]): Row[] {
    return this.prepared(statement, parameters).all(...(parameters as never[])) as Row[];
  }

  /** The first row of a hand-written statement, or null. */
  get<Row>(statement: SqlText, parameters: readonly SQLQueryBindings[]): Row | null {
    return this.prepared(statement, parameters).get(...(parameters as never[])) as Row | null;
  }

  /** How many rows a hand-written statement changed. */
  run(statement: SqlText, parameters: readonly SQLQueryBindings[]): number {
    return this.prepared(statement, parameters).run(...(parameters as never[])).changes;
  }

  private prepared(statement: SqlText, parameters: readonly unknown[]): SqliteStatement {
    this.onQuery?.(statement.sql, parameters);
    return this.connection.statement(statement.sql);
  }
}

const SQLITE_DIALECT = {
  createAdapter: () => new SqliteAdapter(),
  createQueryCompiler: () => new SqliteQueryCompiler(),
};

/**
 * `x` as the SQLite executor: SQLite's statements only ever get the one their store's
 * `transact` made, so anything else is a programming error, said plainly.
 */
export function sqliteExecutor(x: Executor): SqliteExecutor {
  if (x instanceof SqliteExecutor) return x;
  throw new TypeError("SQLite statements need the SQLite store's executor (store.transact)");
}
