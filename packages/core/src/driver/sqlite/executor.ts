import type { SQLQueryBindings, Statement as SqliteStatement } from 'bun:sqlite';
import { type Kysely, SqliteAdapter, SqliteQueryCompiler } from 'kysely';
import type { CompletionTx } from '../../handler/contract.ts';
import { boundKysely, CLOSED_TX } from '../bound-kysely.ts';
import type { Executor, SlotValues, Statement, StatementCache } from '../prepared.ts';
import type { BunSqliteConnection } from './dialect.ts';

/** Called with every statement the store runs (`OpenStoreOptions.onQuery`). */
type OnQuery = (sql: string, parameters: readonly unknown[]) => void;

/** A hand-written SQLite statement: its name (for tests and logs) and its text. */
export interface SqlText {
  readonly name: string;
  /** SQLite SQL with numbered `?N` placeholders, bound in N order. */
  readonly sql: string;
}

/**
 * The SQLite store's {@link Executor}, with a second, synchronous door for the hot path:
 * hand-written SQL (numbered `?N` placeholders) run straight on the connection's cached
 * `bun:sqlite` statement. `sqlite/statements.ts` claims, reads the fence, inserts
 * effects and ACKs through it, with no Kysely build or compile at first use, no slot
 * binding and no promise per statement (profile in the commit that added it: the
 * Kysely compile of the 100-pair ACK alone cost 28-40 ms of CPU in a fresh process).
 *
 * The Kysely-built statements of `shared-statements.ts` still run through
 * {@link rows}/{@link changes}. Both doors use the one connection of the store, inside
 * the caller's `BEGIN IMMEDIATE` transaction.
 *
 * No `#private` fields: a test may wrap the executor with `Object.create(x)` and
 * override one method (tests/conformance/fence.ts does, to interfere before the ACK).
 */
export class SqliteExecutor implements Executor {
  private readonly connection: BunSqliteConnection;
  private readonly cache: StatementCache;
  private readonly onQuery: OnQuery | undefined;

  constructor(connection: BunSqliteConnection, cache: StatementCache, onQuery?: OnQuery) {
    this.connection = connection;
    this.cache = cache;
    this.onQuery = onQuery;
  }

  async rows<Row>(statement: Statement<Row>, values: SlotValues, arity = 1): Promise<Row[]> {
    return this.compiled(statement as Statement<unknown>, values, arity).rows as Row[];
  }

  async changes(statement: Statement<unknown>, values: SlotValues, arity = 1): Promise<number> {
    return this.compiled(statement, values, arity).changes;
  }

  async query<Row>(
    text: string,
    parameters: readonly unknown[] = [],
  ): Promise<{ rows: Row[]; changes: number }> {
    this.onQuery?.(text, parameters);
    const result = await this.connection.runRetrying(text, [...parameters]);
    return { rows: result.rows as Row[], changes: result.changes };
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

  private compiled(statement: Statement<unknown>, values: SlotValues, arity: number) {
    const compiled = this.cache.get(statement, arity);
    const parameters = compiled.bind(values);
    this.onQuery?.(compiled.sql, parameters);
    return this.connection.run(compiled.sql, parameters);
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
