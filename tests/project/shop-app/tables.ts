/**
 * The shop's own tables, created in the store's database through `transaction(store, …)`:
 * on SQLite in the store's file, on PostgreSQL where the connection's search_path puts
 * them (`public` on a stock server).
 */
import { type Store, transaction } from '@onceq/core';

const TABLES = [
  `CREATE TABLE IF NOT EXISTS orders (
     id TEXT PRIMARY KEY, payment_id TEXT NOT NULL, account TEXT NOT NULL, amount_cents BIGINT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ledger (
     event_id TEXT NOT NULL, account TEXT NOT NULL, amount_cents BIGINT NOT NULL, currency TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS balances (
     account TEXT PRIMARY KEY, amount_cents BIGINT NOT NULL, entries BIGINT NOT NULL)`,
];

export async function createTables(store: Store): Promise<void> {
  await transaction(store, async (tx) => {
    for (const statement of TABLES) await tx.query(statement);
  });
}
