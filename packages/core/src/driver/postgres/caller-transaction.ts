import {
  type CallerTransaction,
  isKysely,
  kyselyRunner,
  notATransaction,
  type PgClientLike,
} from '../caller-transaction.ts';
import { type RunSql, storeTransactionRunner } from '../open-transactions.ts';

/**
 * The caller's PostgreSQL transaction as a {@link RunSql}: the `tx` of
 * `transaction(store, fn)`, a Kysely transaction, or a `pg` client after `BEGIN`. A savepoint outside a transaction block is an error on
 * PostgreSQL, so a client that never began one is refused by the server.
 */
export function postgresCallerRunner(within: CallerTransaction): RunSql {
  const own = storeTransactionRunner(within);
  if (own !== undefined) return own;
  if (isKysely(within)) return kyselyRunner(within);
  if (typeof (within as PgClientLike).query === 'function') {
    const client = within as PgClientLike;
    return async (sql, parameters) => {
      const result = await client.query(sql, [...parameters]);
      return { rows: result.rows, changes: result.rowCount ?? 0 };
    };
  }
  throw notATransaction(
    'PostgreSQL',
    'the tx of transaction(store, fn), a Kysely transaction or a pg client after BEGIN',
  );
}
