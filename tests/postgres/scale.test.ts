/**
 * 64 real `onceq worker` processes on one PostgreSQL at its default `max_connections =
 * 100`: claims and results through PgBouncer in transaction mode, each worker's LISTEN
 * on a direct connection (`?listen_url=`). The server never refuses a connection, and
 * the totals are exact. Skips without DATABASE_URL unless ONCEQ_REQUIRE_POSTGRES=1 or CI.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { SQL } from 'bun';
import { cliSandbox } from '../support/cli.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import { expectedFacts, storeFacts } from '../support/pg-storm.ts';
import {
  type Pooler,
  poolerAvailable,
  poolerSuiteSkipped,
  startPooler,
} from '../support/pgbouncer.ts';
import { writeBatchFiles } from '../support/storm.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const binary = poolerAvailable();
const SKIP = poolerSuiteSkipped('postgres-scale.test.ts');

const WORKERS = 64;
const EVENTS = 640;

describe.skipIf(SKIP)('64 workers within the default connection limit', () => {
  const database = scratchDatabase('scale');
  let pooler: Pooler | undefined;
  beforeAll(async () => {
    if (binary !== true) throw new Error(binary);
    await database.create();
    pooler = await startPooler(DATABASE_URL as string, 'transaction');
  }, 60_000);
  afterAll(async () => {
    await pooler?.stop();
    await database.drop();
  }, 60_000);

  test('64 worker processes through PgBouncer, LISTEN direct: no connection refused, exact totals', async () => {
    const sandbox = cliSandbox();
    const workers: WorkerProcess[] = [];
    const admin = new SQL(DATABASE_URL as string);
    try {
      const name = new URL(database.url).pathname.slice(1);
      const through = `${(pooler as Pooler).urlFor(name)}?listen_url=${encodeURIComponent(database.url)}`;
      const created = await sandbox.run(['work', '--db', through]);
      expect(created.code).toBe(0);
      for (let i = 0; i < WORKERS; i++) {
        workers.push(startWorker(['--db', through, '--batch', '5'], sandbox.cwd));
      }
      for (const worker of workers) await worker.waitForLog(/worker started/, 240_000);
      const [{ n: connected }] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE backend_type = 'client backend'`;
      // 64 LISTEN connections and the pooler's few: within the 97 a non-superuser has.
      expect(connected).toBeLessThan(97);

      const [file] = writeBatchFiles(join(sandbox.cwd, 'in'), EVENTS, EVENTS);
      const enqueued = await sandbox.run(['enqueue', file as string, '--db', through]);
      expect(enqueued.stderr).toBe('');
      expect(enqueued.code).toBe(0);

      const client = new SQL(database.url);
      try {
        for (let i = 0; i < 2400; i++) {
          const [row] =
            await client`SELECT count(*)::int AS n FROM onceq.messages WHERE state = 'done'`;
          if ((row as { n: number }).n === EVENTS) break;
          await Bun.sleep(50);
        }
        const [{ attempts }] =
          await client`SELECT sum(attempts)::int AS attempts FROM onceq.messages`;
        expect(attempts).toBe(EVENTS);
      } finally {
        await client.close();
      }
      expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
      for (const worker of workers) worker.signal('SIGTERM');
      for (const worker of workers) expect(await worker.exited(120_000)).toBe(0);
      for (const worker of workers) {
        expect(worker.stderr()).not.toMatch(
          /refuses more connections|too many clients|hears no notifications/,
        );
      }
    } finally {
      for (const worker of workers) {
        try {
          worker.signal('SIGTERM');
        } catch {
          // Already exited.
        }
      }
      await Promise.all(workers.map((w) => w.exited(30_000).catch(() => 0)));
      await admin.close();
      sandbox.cleanup();
    }
  }, 480_000);
});
