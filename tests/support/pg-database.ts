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

/** True when DATABASE_URL is set, or ONCEQ_REQUIRE_POSTGRES=1 makes its absence a failure. */
export function postgresWanted(): boolean {
  return Boolean(process.env.DATABASE_URL) || process.env.ONCEQ_REQUIRE_POSTGRES === '1';
}
