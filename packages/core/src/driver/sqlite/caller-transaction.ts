import {
  type BunSqliteLike,
  type CallerTransaction,
  isKysely,
  kyselyRunner,
  notATransaction,
  type RunSql,
} from '../caller-transaction.ts';

/**
 * The caller's SQLite transaction as a {@link RunSql}: a Kysely transaction, or a
 * `bun:sqlite` Database with a transaction open (`db.transaction(fn)` cannot await, so
 * open it with `db.run('BEGIN IMMEDIATE')` and end it with COMMIT or ROLLBACK).
 */
export function sqliteCallerRunner(within: CallerTransaction): RunSql {
  if (isKysely(within)) return kyselyRunner(within);
  if (isBunSqlite(within)) {
    if (!within.inTransaction) {
      throw new TypeError(
        "enqueue: the bun:sqlite Database given as the transaction has no transaction open (run 'BEGIN IMMEDIATE' first)",
      );
    }
    return async (sql, parameters) => {
      const statement = within.query(sql) as ReturnType<BunSqliteLike['query']> & {
        columnNames: string[];
      };
      if (statement.columnNames.length > 0) {
        const rows = statement.all(...(parameters as never[]));
        return { rows, changes: rows.length };
      }
      return { rows: [], changes: statement.run(...(parameters as never[])).changes };
    };
  }
  throw notATransaction(
    'SQLite',
    'a Kysely transaction or a bun:sqlite Database with a transaction open',
  );
}

function isBunSqlite(value: CallerTransaction): value is BunSqliteLike {
  return (
    typeof (value as BunSqliteLike).query === 'function' &&
    typeof (value as BunSqliteLike).inTransaction === 'boolean'
  );
}
