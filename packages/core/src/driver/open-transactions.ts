/**
 * The open transactions of `transaction(store, fn)` (store-transaction.ts), each with how
 * onceq's statements run on it, so `enqueue(…, { transaction: tx })` finds them
 * (caller-transaction.ts), and the kinds of transaction a caller may hold open. A leaf: it
 * imports nothing of the driver.
 */
import type { Transaction } from 'kysely';
import type { CompletionTx } from '../handler/contract.ts';

/** A `pg` client (`Client` or a checked-out `PoolClient`), by the one method onceq calls. */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * A transaction the caller holds open on the store's database: the `tx` of
 * `transaction(store, fn)` on either backend (on SQLite the only one: it runs on the
 * store's own connection); on PostgreSQL also a Kysely transaction
 * (`db.transaction().execute(async (trx) => …)`) or a `pg` client after `BEGIN`.
 */
export type CallerTransaction =
  | CompletionTx
  // biome-ignore lint/suspicious/noExplicitAny: a caller's Kysely has its own schema type.
  | Transaction<any>
  | PgClientLike;

/** One statement on the caller's connection: its rows, and how many rows it changed. */
export type RunSql = (
  sql: string,
  parameters: readonly unknown[],
) => Promise<{ rows: unknown[]; changes: number }>;

/** The open transactions, each with how onceq's statements run on it. */
const open = new WeakMap<object, RunSql>();
/** Runners that log through the store's own executor already (`onQuery` once per statement). */
const logged = new WeakSet<RunSql>();

/** `tx` is open and onceq's statements run on it through `run`, which logs itself. */
export function openTransaction(tx: object, run: RunSql): void {
  logged.add(run);
  open.set(tx, run);
}

/** `tx` has ended. */
export function closeTransaction(tx: object): void {
  open.delete(tx);
}

/** How onceq's statements run inside `value` when it is an open transaction's `tx`. */
export function storeTransactionRunner(value: unknown): RunSql | undefined {
  return typeof value === 'object' && value !== null ? open.get(value) : undefined;
}

/** Whether `run` logs its statements itself (an open transaction's). */
export function logsItself(run: RunSql): boolean {
  return logged.has(run);
}
