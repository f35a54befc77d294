/**
 * The ledger application's own tables, beside onceq's in the same store: on SQLite in the
 * same file, on PostgreSQL in the same database, in the schema the connection's
 * `search_path` finds first (`public` by default; onceq's tables are in `onceq`). The
 * same names on both backends, unqualified, as any application names its tables.
 *
 * - ledger_entries: one row per applied event (`event_id` unique: a second guard; onceq's
 *   fenced ACK is what makes each event count once).
 * - ledger_balances: the running balance of each account in each currency, in minor units.
 */
import { Database } from 'bun:sqlite';
import { SQL } from 'bun';

/** The currencies the ledger keeps. */
export const CURRENCIES = ['EUR', 'USD', 'JPY'] as const;
export type Currency = (typeof CURRENCIES)[number];

export const ENTRIES = 'ledger_entries';
export const BALANCES = 'ledger_balances';

function isPostgres(target: string): boolean {
  return /^postgres(ql)?:\/\//.test(target);
}

/** Creates the ledger's tables at `target` if they do not exist (the application's own migration). */
export async function createTables(target: string): Promise<void> {
  const bigint = isPostgres(target) ? 'BIGINT' : 'INTEGER';
  const ddl = `CREATE TABLE IF NOT EXISTS ${ENTRIES} (
        event_id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount_minor ${bigint} NOT NULL
      )`;
  const balances = `CREATE TABLE IF NOT EXISTS ${BALANCES} (
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        balance_minor ${bigint} NOT NULL,
        PRIMARY KEY (account, currency)
      )`;
  if (!isPostgres(target)) {
    const db = new Database(target, { create: true });
    try {
      db.run('PRAGMA journal_mode = WAL');
      db.run(`${ddl} STRICT`);
      db.run(`${balances} STRICT`);
    } finally {
      db.close();
    }
    return;
  }
  const sql = new SQL(target);
  try {
    await sql.unsafe(`${ddl}; ${balances};`);
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
  const postgres = isPostgres(target);
  // Amounts are read as text and parsed as bigint: exact at any size.
  const entrySql = `SELECT event_id, CAST(amount_minor AS TEXT) AS amount FROM ${ENTRIES}`;
  const balanceSql = `SELECT account, currency, CAST(balance_minor AS TEXT) AS balance FROM ${BALANCES}`;
  // onceq's own table, in its schema (`main` is the SQLite file's).
  const stateSql = `SELECT state, count(*) AS n FROM ${postgres ? 'onceq' : 'main'}.messages GROUP BY state`;
  let entryRows: { event_id: string; amount: string }[];
  let balanceRows: { account: string; currency: string; balance: string }[];
  let stateRows: { state: string; n: number | string }[];
  if (!postgres) {
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
