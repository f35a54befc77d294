/**
 * A throwaway PostgreSQL database for tests that run the real CLI, which always uses the
 * schema `onceq`: one database per test file (CREATE DATABASE is slow), the schema
 * dropped between tests, the database dropped at the end.
 */
import { SQL } from 'bun';

export interface ScratchDatabase {
  /** The database's URL (DATABASE_URL with another database name). */
  readonly url: string;
  create(): Promise<void>;
  /** Drops the CLI's schema `onceq`: the next test starts empty. */
  reset(): Promise<void>;
  drop(): Promise<void>;
}

async function run(url: string, statement: string): Promise<void> {
  const client = new SQL(url);
  try {
    await client.unsafe(statement);
  } finally {
    await client.close();
  }
}

export function scratchDatabase(prefix: string): ScratchDatabase {
  const base = process.env.DATABASE_URL ?? '';
  const name = `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const url = new URL(base || 'postgres://localhost/x');
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    create: () => run(base, `CREATE DATABASE ${name}`),
    reset: () => run(url.toString(), 'DROP SCHEMA IF EXISTS onceq CASCADE'),
    drop: () => run(base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * Waits until no other client of `url`'s database is inside a transaction. A process
 * that died mid-transaction leaves its server backend behind for a moment: until the
 * server reads the closed socket, that backend still holds the dead transaction's row
 * locks, and a claim's `SKIP LOCKED` would skip those rows. Call after a crash, before
 * the next claim. Bounded at 30 s.
 */
export async function untilNoOpenTransactions(url: string): Promise<void> {
  const client = new SQL(url);
  try {
    for (let i = 0; i < 600; i++) {
      const [row] = await client`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND backend_type = 'client backend' AND xact_start IS NOT NULL`;
      if ((row as { n: number }).n === 0) return;
      await Bun.sleep(50);
    }
    throw new Error('a dead client still holds a transaction after 30 s');
  } finally {
    await client.close();
  }
}
