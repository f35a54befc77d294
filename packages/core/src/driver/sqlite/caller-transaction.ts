import { type CallerTransaction, notATransaction } from '../caller-transaction.ts';
import type { RunSql } from '../open-transactions.ts';
import { storeTransactionRunner } from '../open-transactions.ts';

/**
 * The caller's SQLite transaction as a {@link RunSql}: only the `tx` of
 * `transaction(store, fn)`, which runs on the store's own connection. A transaction on a
 * second connection to the same file is refused: bun:sqlite is synchronous, so in one
 * process two connections to one file block each other (and a busy wait on one freezes
 * the thread that holds the other), and one shared `bun:sqlite` Database cannot hold two
 * concurrent requests' transactions at once.
 */
export function sqliteCallerRunner(within: CallerTransaction): RunSql {
  const own = storeTransactionRunner(within);
  if (own !== undefined) return own;
  throw notATransaction(
    'SQLite',
    "the tx of transaction(store, async (tx) => …), open on the store's own connection",
  );
}
