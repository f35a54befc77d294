/**
 * Your own transaction on onceq's connection to the store: your writes and an `enqueue`
 * commit together or not at all (the outbox pattern), and concurrent callers in one
 * process take turns instead of colliding on one connection.
 */
import type { CompletionTx } from '../handler/contract.ts';
import type { Store } from './backend.ts';
import { closeTransaction, openTransaction, type RunSql } from './open-transactions.ts';

/**
 * The transaction `transaction(store, fn)` gives `fn`: the same shape as a completion's
 * `tx` (`kind`, `query(sql, params)`, `db`, a Kysely bound to it), valid while `fn` runs.
 * Pass it to `enqueue(store, events, { transaction: tx })`.
 */
export type StoreTransaction = CompletionTx;

/**
 * Runs `fn` in one write transaction on the store's own connection and commits when it
 * resolves (rolls back and rethrows when it throws). Write your rows with `tx.query` or
 * `tx.db` and enqueue with `{ transaction: tx }`: both commit, or neither.
 *
 * SQLite: `BEGIN IMMEDIATE` on the store's one connection; concurrent calls in one
 * process wait their turn (as the worker's transactions do), so each holds the file's
 * write lock for as long as `fn` runs: keep it short. PostgreSQL: a pooled connection
 * (`BEGIN`); `fn` runs again after a deadlock or serialization failure, so keep it to
 * statements on `tx`. Inside `fn`, use only `tx` for the store: a call on `store`
 * itself (an `enqueue` without `{ transaction: tx }`) waits for this transaction on
 * SQLite and never finishes.
 */
export function transaction<T>(store: Store, fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
  return store.transact(async (x) => {
    const { tx, close } = x.completionTx();
    const run: RunSql = async (sql, parameters) => {
      const { rows, changes } = await x.query<unknown>(sql, parameters);
      return { rows, changes };
    };
    openTransaction(tx, run);
    try {
      return await fn(tx);
    } finally {
      close();
      closeTransaction(tx);
    }
  });
}
