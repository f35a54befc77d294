/**
 * A throwaway PgBouncer (scripts/pgbouncer.sh) in front of DATABASE_URL's server, for the
 * suites that run onceq behind a pooler. Each call gets a state file of its own, so
 * parallel test files never share a pooler; `stop()` ends it by the pid it recorded.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from './spawn.ts';

const SCRIPT = resolve(import.meta.dir, '../../scripts/pgbouncer.sh');

export interface Pooler {
  /** DATABASE_URL's database, through the pooler. */
  readonly url: string;
  /** `url` with another database name, through the same pooler. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

/** True when a pgbouncer binary is installed, else why not. */
export function poolerAvailable(): true | string {
  return existsSync('/usr/sbin/pgbouncer') || Bun.which('pgbouncer') !== null
    ? true
    : 'no pgbouncer binary (apt-get install -y pgbouncer)';
}

/**
 * Whether a suite that needs DATABASE_URL and a pgbouncer binary is skipped here: never
 * where PostgreSQL is required (CI, ONCEQ_REQUIRE_POSTGRES=1: a missing piece fails its
 * tests instead); otherwise when either is missing, said once on stderr.
 */
export function poolerSuiteSkipped(file: string): boolean {
  const required = process.env.ONCEQ_REQUIRE_POSTGRES === '1' || Boolean(process.env.CI);
  const binary = poolerAvailable();
  const skip = !required && (!process.env.DATABASE_URL || binary !== true);
  if (skip) {
    console.warn(
      `${file}: skipped: ${process.env.DATABASE_URL ? binary : 'DATABASE_URL is not set'}`,
    );
  }
  return skip;
}

/** Starts a PgBouncer in `mode` in front of `directUrl`'s server, `poolSize` server connections per database. */
export async function startPooler(
  directUrl: string,
  mode: 'transaction' | 'session' = 'transaction',
  poolSize = 20,
): Promise<Pooler> {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-pgb-state-'));
  const env = {
    ...process.env,
    ONCEQ_PGBOUNCER_POOL_SIZE: String(poolSize),
    ONCEQ_PGBOUNCER_STATE: join(dir, 'state'),
    ONCEQ_PGBOUNCER_FIRST_PORT: process.env.ONCEQ_PGBOUNCER_FIRST_PORT ?? '6440',
  };
  const stop = async () => {
    await runProcess(['bash', SCRIPT, 'stop'], { env });
    rmSync(dir, { recursive: true, force: true });
  };
  const started = await runProcess(['bash', SCRIPT, 'start', directUrl, mode], { env });
  if (started.code !== 0) {
    await stop();
    throw new Error(`pgbouncer did not start (exit ${started.code}): ${started.stderr}`);
  }
  const url = started.stdout.trim();
  return {
    url,
    urlFor(database) {
      const u = new URL(url);
      u.pathname = `/${database}`;
      return u.toString();
    },
    stop,
  };
}
