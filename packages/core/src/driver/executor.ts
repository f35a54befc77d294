import type { Clock } from '../clock.ts';
import type { CompletionTx } from '../handler/contract.ts';
import type { CallerTransaction } from './open-transactions.ts';
import type { SqlDialect, SqlText } from './sql-text.ts';

/** What a statement returned: its rows (a SELECT, or `… RETURNING`) and the rows it changed. */
export interface QueryResult<Row> {
  rows: Row[];
  changes: number;
}

/**
 * Runs a driver's statements in one place the store opened: its write transaction
 * (`Store.transact`), a caller's transaction, or no transaction (`Store.read`, each
 * statement committing by itself). Only the driver folders call it.
 */
export interface Executor {
  /** How this executor's backend writes SQL (placeholders, table names, clock). */
  readonly dialect: SqlDialect;
  /**
   * Runs one statement with `parameters` in placeholder order. A {@link SqlText} runs as a
   * named prepared statement where the backend prepares (PostgreSQL, while the server
   * keeps them); plain text (maintenance, DDL) runs unnamed.
   */
  query<Row>(
    statement: SqlText | string,
    parameters?: readonly unknown[],
  ): Promise<QueryResult<Row>>;
  /**
   * Runs `fn` inside a savepoint of the open transaction: released when `fn` resolves,
   * rolled back to (everything `fn` wrote undone, the rest of the transaction kept) and
   * the error rethrown when it throws.
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * The open transaction as a completion's `write(tx)` gets it (see {@link CompletionTx});
   * `close()` once the write returned, after which `tx` refuses every query.
   */
  completionTx(): { tx: CompletionTx; close(): void };
}

/**
 * What a driver method needs of its store (`Store` in backend.ts has it all): the clock,
 * and its write transaction and its autocommit statements, each as an {@link Executor}.
 */
export interface StatementRunner {
  readonly clock: Clock;
  transact<T>(fn: (x: Executor) => Promise<T>, within?: CallerTransaction): Promise<T>;
  read<T>(fn: (x: Executor) => Promise<T>): Promise<T>;
}
