/**
 * 64 real `onceq worker` processes on one PostgreSQL at its default `max_connections =
 * 100`: claims and results through PgBouncer in transaction mode, each worker's LISTEN
 * on a direct connection (`?listen_url=`). The server never refuses a connection, and
 * the totals are exact. Skips without DATABASE_URL unless ONCEQ_REQUIRE_POSTGRES=1 or CI.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SQL } from 'bun';
import { cliSandbox } from './support/cli.ts';
import { scratchDatabase } from './support/pg-database.ts';
import { type Pooler, poolerAvailable, startPooler } from './support/pgbouncer.ts';
import { startWorker, type WorkerProcess } from './support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const REQUIRED = process.env.ONCEQ_REQUIRE_POSTGRES === '1' || Boolean(process.env.CI);
const binary = poolerAvailable();
const SKIP = !REQUIRED && (!DATABASE_URL || binary !== true);
if (SKIP) {
  console.warn(
    `postgres-scale.test.ts: skipped: ${DATABASE_URL ? binary : 'DATABASE_URL is not set'}`,
  );
}

const WORKERS = 64;
const EVENTS = 640;
const CATEGORIES = ['book', 'pen', 'bag'] as const;

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

      const file = join(sandbox.cwd, 'events.jsonl');
      const lines = Array.from({ length: EVENTS }, (_, i) =>
        JSON.stringify({
          event_id: `E${String(i + 1).padStart(4, '0')}`,
          payload: { category: CATEGORIES[i % 3], amount_cents: 100 + i },
        }),
      );
      writeFileSync(file, `${lines.join('\n')}\n`);
      const enqueued = await sandbox.run(['enqueue', file, '--db', through]);
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
        const [facts] = await client`SELECT
            count(*) FILTER (WHERE state = 'done')::int AS done,
            sum(attempts)::int AS attempts,
            (SELECT count(*)::int FROM onceq.effects) AS effects,
            (SELECT sum(amount_cents)::int FROM onceq.effects) AS cents
          FROM onceq.messages`;
        const cents = lines.reduce((sum, _, i) => sum + 100 + i, 0);
        expect(facts).toEqual({ done: EVENTS, attempts: EVENTS, effects: EVENTS, cents });
      } finally {
        await client.close();
      }
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
