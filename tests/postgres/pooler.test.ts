/**
 * onceq behind a stock PgBouncer in transaction mode (scripts/pgbouncer.sh, loopback):
 * the conformance suite through it, real CLI processes through it, and read-only
 * commands that must never create a schema. Skips without DATABASE_URL unless
 * ONCEQ_REQUIRE_POSTGRES=1 or CI; there a missing pgbouncer binary is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SQL } from 'bun';
import { exerciseBackend } from '../conformance/index.ts';
import { cliSandbox, DEMO_JSONL } from '../support/cli.ts';
import { postgresFactoryThrough } from '../support/factories.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import {
  type Pooler,
  poolerAvailable,
  poolerSuiteSkipped,
  startPooler,
} from '../support/pgbouncer.ts';
import { startWorker } from '../support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const binary = poolerAvailable();
const SKIP = poolerSuiteSkipped('postgres-pooler.test.ts');

let pooler: Pooler | undefined;
beforeAll(async () => {
  if (SKIP) return;
  if (!DATABASE_URL)
    throw new Error('DATABASE_URL is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)');
  if (binary !== true) throw new Error(binary);
  pooler = await startPooler(DATABASE_URL, 'transaction');
}, 60_000);
afterAll(async () => {
  await pooler?.stop();
}, 60_000);

if (!SKIP) {
  exerciseBackend(
    'postgres behind PgBouncer (transaction mode)',
    postgresFactoryThrough('postgres behind PgBouncer', () => pooler?.url),
  );
}

async function schemaExists(url: string): Promise<boolean> {
  const client = new SQL(url);
  try {
    const rows = await client`SELECT 1 FROM pg_namespace WHERE nspname = 'onceq'`;
    return rows.length > 0;
  } finally {
    await client.close();
  }
}

describe.skipIf(SKIP)('the CLI behind PgBouncer in transaction mode', () => {
  const database = scratchDatabase('pooler');
  beforeAll(() => database.create(), 60_000);
  afterAll(() => database.drop(), 60_000);

  test('read-only commands, redrive and fail on a database without the schema refuse it and create nothing', async () => {
    const sandbox = cliSandbox();
    try {
      for (const url of [
        database.url,
        (pooler as Pooler).urlFor(new URL(database.url).pathname.slice(1)),
      ]) {
        for (const args of [
          ['status'],
          ['show', 'E0001'],
          ['list'],
          ['dlq'],
          ['redrive', 'nosuch'],
          ['fail', 'nosuch', '--generation', '1', '--permanent'],
        ]) {
          const result = await sandbox.run([...args, '--db', url]);
          expect(result.code).toBe(2);
          expect(result.stderr).toMatch(
            /^onceq: no onceq store in schema onceq of PostgreSQL at .*nothing was created/,
          );
          expect(result.stderr.trim().split('\n')).toHaveLength(1);
        }
        const version = await sandbox.run(['--version', '--db', url]);
        expect(version.code).toBe(0);
        expect(version.stdout).toContain('store: schema version none');
        expect(await schemaExists(database.url)).toBe(false);
      }
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);

  test('enqueue, work and status run unchanged, in schema onceq, and a direct open finds the same tables without waiting on a lock', async () => {
    await database.reset();
    const sandbox = cliSandbox();
    const through = (pooler as Pooler).urlFor(new URL(database.url).pathname.slice(1));
    try {
      const enqueued = await sandbox.run(['enqueue', DEMO_JSONL, '--db', through]);
      expect(enqueued.stderr).toBe('');
      expect(enqueued.code).toBe(0);
      const worked = await sandbox.run(['work', '--db', through]);
      expect(worked.code).toBe(0);
      expect(worked.stdout).toContain('3 done');
      // Directly, after several opens through the pooler: no advisory lock left behind.
      const direct = await sandbox.run(['status', '--json', '--db', database.url]);
      expect(direct.code).toBe(0);
      expect(JSON.parse(direct.stdout).messages).toMatchObject({ done: 3, dead: 1 });
      const client = new SQL(database.url);
      try {
        const tables = await client`SELECT table_schema FROM information_schema.tables
          WHERE table_name = 'messages'`;
        expect(tables.map((t: { table_schema: string }) => t.table_schema)).toEqual(['onceq']);
        const locks =
          await client`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`;
        expect(locks[0].n).toBe(0);
      } finally {
        await client.close();
      }
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);

  test('a worker behind the pooler says once that it polls; with ?listen_url= it LISTENs on the direct connection', async () => {
    await database.reset();
    const sandbox = cliSandbox();
    const through = (pooler as Pooler).urlFor(new URL(database.url).pathname.slice(1));
    try {
      const polling = startWorker(['--db', through], sandbox.cwd);
      await polling.waitForLog(/worker started/);
      polling.signal('SIGTERM');
      expect(await polling.exited()).toBe(0);
      expect(polling.stderr().match(/hears no notifications/g)).toHaveLength(1);
      expect(polling.stderr()).toContain('listen_url');

      const listening = startWorker(
        ['--db', `${through}?listen_url=${encodeURIComponent(database.url)}`],
        sandbox.cwd,
      );
      await listening.waitForLog(/worker started .*LISTEN\/NOTIFY/);
      const enqueued = await sandbox.run(['enqueue', DEMO_JSONL, '--db', through]);
      expect(enqueued.code).toBe(0);
      await listening.waitForLog(/E0004/);
      listening.signal('SIGTERM');
      expect(await listening.exited()).toBe(0);
      expect(listening.stderr()).not.toContain('hears no notifications');
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);
});
