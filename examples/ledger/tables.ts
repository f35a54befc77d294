/**
 * The ledger application's own tables, beside onceq's in the same store: on SQLite in the
 * same file, on PostgreSQL in the same database under the schema `ledger`.
 *
 * - entries: one row per applied event (`event_id` unique: a second guard; onceq's
 *   fenced ACK is what makes each event count once).
 * - balances: the running balance of each account in each currency, in minor units.
 */
import { Database } from 'bun:sqlite';
import { SQL } from 'bun';

/** The currencies the ledger keeps. */
export const CURRENCIES = ['EUR', 'USD', 'JPY'] as const;
export type Currency = (typeof CURRENCIES)[number];

export type Backend = 'sqlite' | 'postgres';

export function backendOf(target: string): Backend {
  return /^postgres(ql)?:\/\//.test(target) ? 'postgres' : 'sqlite';
}

/** The entries table's name on a backend (onceq's PostgreSQL connections search `onceq` first: qualify). */
export function entriesTable(kind: Backend): string {
  return kind === 'postgres' ? 'ledger.entries' : 'ledger_entries';
}

export function balancesTable(kind: Backend): string {
  return kind === 'postgres' ? 'ledger.balances' : 'ledger_balances';
}

/** Creates the ledger's tables at `target` if they do not exist (the application's own migration). */
export async function createTables(target: string): Promise<void> {
  if (backendOf(target) === 'sqlite') {
    const db = new Database(target, { create: true });
    try {
      db.run('PRAGMA journal_mode = WAL');
      db.run(`CREATE TABLE IF NOT EXISTS ledger_entries (
        event_id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount_minor INTEGER NOT NULL
      ) STRICT`);
      db.run(`CREATE TABLE IF NOT EXISTS ledger_balances (
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        balance_minor INTEGER NOT NULL,
        PRIMARY KEY (account, currency)
      ) STRICT`);
    } finally {
      db.close();
    }
    return;
  }
  const sql = new SQL(target);
  try {
    await sql.unsafe(`CREATE SCHEMA IF NOT EXISTS ledger;
      CREATE TABLE IF NOT EXISTS ledger.entries (
        event_id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount_minor BIGINT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ledger.balances (
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        balance_minor BIGINT NOT NULL,
        PRIMARY KEY (account, currency)
      );`);
  } finally {
    await sql.close();
  }
}

/** What the ledger holds, read with the application's own connection (never through onceq). */
export interface LedgerContents {
  /** event id → signed amount, one per entry row (a repeated id would show in `rows`). */
  entries: Map<string, bigint>;
  rows: number;
  /** `account currency` → balance. */
  balances: Map<string, bigint>;
  /** onceq's messages by state. */
  states: Record<string, number>;
}

export async function readLedger(target: string): Promise<LedgerContents> {
  const kind = backendOf(target);
  // Amounts are read as text and parsed as bigint: exact at any size.
  const entrySql = `SELECT event_id, CAST(amount_minor AS TEXT) AS amount FROM ${entriesTable(kind)}`;
  const balanceSql = `SELECT account, currency, CAST(balance_minor AS TEXT) AS balance FROM ${balancesTable(kind)}`;
  const stateSql = `SELECT state, count(*) AS n FROM ${kind === 'postgres' ? 'onceq.messages' : 'messages'} GROUP BY state`;
  let entryRows: { event_id: string; amount: string }[];
  let balanceRows: { account: string; currency: string; balance: string }[];
  let stateRows: { state: string; n: number | string }[];
  if (kind === 'sqlite') {
    const db = new Database(target, { readonly: true });
    try {
      entryRows = db.query(entrySql).all() as typeof entryRows;
      balanceRows = db.query(balanceSql).all() as typeof balanceRows;
      stateRows = db.query(stateSql).all() as typeof stateRows;
    } finally {
      db.close();
    }
  } else {
    const sql = new SQL(target);
    try {
      entryRows = (await sql.unsafe(entrySql)) as typeof entryRows;
      balanceRows = (await sql.unsafe(balanceSql)) as typeof balanceRows;
      stateRows = (await sql.unsafe(stateSql)) as typeof stateRows;
    } finally {
      await sql.close();
    }
  }
  const entries = new Map<string, bigint>();
  for (const r of entryRows) entries.set(r.event_id, BigInt(r.amount));
  const balances = new Map<string, bigint>();
  for (const r of balanceRows) balances.set(`${r.account} ${r.currency}`, BigInt(r.balance));
  const states: Record<string, number> = {};
  for (const r of stateRows) states[r.state] = Number(r.n);
  return { entries, rows: entryRows.length, balances, states };
}
