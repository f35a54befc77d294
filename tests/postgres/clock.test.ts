/**
 * Hosts whose clocks disagree share one PostgreSQL store: real `onceq worker` processes,
 * one 60 s ahead and one 60 s behind (libfaketime preloaded), next to one on the true
 * clock, with 30 s leases. Every lease decision is on the server's clock, so no lease is
 * stolen while live and none expires at birth: every message is done after exactly one
 * attempt. Skips without DATABASE_URL unless ONCEQ_REQUIRE_POSTGRES=1 or CI; there a
 * missing libfaketime is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SQL } from 'bun';
import { cliSandbox } from '../support/cli.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import { expectedFacts, storeFacts } from '../support/pg-storm.ts';
import { writeBatchFiles } from '../support/storm.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const REQUIRED = process.env.ONCEQ_REQUIRE_POSTGRES === '1' || Boolean(process.env.CI);
const FAKETIME = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib']
  .map((dir) => join(dir, 'faketime/libfaketimeMT.so.1'))
  .find((path) => existsSync(path));
const SKIP = !REQUIRED && (!DATABASE_URL || FAKETIME === undefined);
if (SKIP) {
  console.warn(
    `postgres-clock.test.ts: skipped: ${DATABASE_URL ? 'no libfaketime (apt-get install -y faketime)' : 'DATABASE_URL is not set'}`,
  );
}

const EVENTS = 120;

/** A clock the test steps while the process runs: libfaketime re-reads `file` at every read. */
function steppable(file: string): Record<string, string> {
  writeFileSync(file, '+0\n');
  return {
    LD_PRELOAD: FAKETIME as string,
    FAKETIME_TIMESTAMP_FILE: file,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
    NO_FAKE_STAT: '1',
  };
}

function skewed(offset: string): Record<string, string> {
  return {
    LD_PRELOAD: FAKETIME as string,
    FAKETIME: offset,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
    NO_FAKE_STAT: '1',
  };
}

describe.skipIf(SKIP)('hosts with skewed clocks on one PostgreSQL store', () => {
  const database = scratchDatabase('clock');
  beforeAll(() => database.create(), 60_000);
  afterAll(() => database.drop(), 60_000);

  test('workers 60 s ahead and 60 s behind next to a true one: every message done after one attempt', async () => {
    if (FAKETIME === undefined)
      throw new Error('libfaketime is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)');
    const sandbox = cliSandbox();
    const workers: WorkerProcess[] = [];
    try {
      const created = await sandbox.run(['work', '--db', database.url]);
      expect(created.code).toBe(0);
      const common = ['--db', database.url, '--batch', '1', '--lease', '30'];
      workers.push(startWorker(common, sandbox.cwd));
      workers.push(startWorker(common, sandbox.cwd, skewed('+60s')));
      workers.push(startWorker(common, sandbox.cwd, skewed('-60s')));
      for (const worker of workers) await worker.waitForLog(/worker started/, 60_000);

      const [file] = writeBatchFiles(join(sandbox.cwd, 'in'), EVENTS, EVENTS);
      const enqueued = await sandbox.run(['enqueue', file as string, '--db', database.url]);
      expect(enqueued.code).toBe(0);

      const client = new SQL(database.url);
      try {
        // Wait for the event (every message finished), bounded.
        for (let i = 0; i < 1200; i++) {
          const [row] =
            await client`SELECT count(*)::int AS n FROM onceq.messages WHERE state IN ('done', 'dead')`;
          if ((row as { n: number }).n === EVENTS) break;
          await Bun.sleep(50);
        }
        for (const worker of workers) worker.signal('SIGTERM');
        for (const worker of workers) expect(await worker.exited(60_000)).toBe(0);
        const [{ attempts }] =
          await client`SELECT sum(attempts)::int AS attempts FROM onceq.messages`;
        expect(attempts).toBe(EVENTS);
      } finally {
        await client.close();
      }
      expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
      // Each host took part: the skewed ones claimed and recorded messages too.
      for (const worker of workers) {
        expect(worker.stdout()).toMatch(
          /claimed [1-9]\d* messages: [1-9]\d* done, 0 retried, 0 dead, 0 lost/,
        );
      }
    } finally {
      for (const worker of workers) {
        try {
          worker.signal('SIGTERM');
        } catch {
          // Already exited.
        }
        await worker.exited(30_000).catch(() => {});
      }
      sandbox.cleanup();
    }
  }, 180_000);

  test('a worker whose clock steps 60 s ahead while it runs does not steal a live lease', async () => {
    if (FAKETIME === undefined)
      throw new Error('libfaketime is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)');
    await database.reset();
    const sandbox = cliSandbox();
    const line = (id: string) =>
      `{"event_id":"${id}","payload":{"category":"book","amount_cents":100}}\n`;
    writeFileSync(join(sandbox.cwd, 'first.jsonl'), line('E0001'));
    writeFileSync(join(sandbox.cwd, 'second.jsonl'), line('E0002'));
    const db = ['--db', database.url];
    let worker: WorkerProcess | undefined;
    const client = new SQL(database.url);
    try {
      expect((await sandbox.run(['enqueue', 'first.jsonl', ...db])).code).toBe(0);
      // A live 30 s lease on the true clock.
      const claimed = await sandbox.run(['claim', ...db, '--lease', '30', '--json']);
      expect(claimed.code).toBe(0);
      expect(JSON.parse(claimed.stdout)).toMatchObject({ event_id: 'E0001', generation: 1 });

      const clockFile = join(sandbox.cwd, 'clock');
      worker = startWorker([...db, '--batch', '1'], sandbox.cwd, steppable(clockFile));
      await worker.waitForLog(/worker started/, 60_000);
      // The host's clock steps past the lease's end after the worker opened its store.
      writeFileSync(clockFile, '+60s\n');
      // Wakes the worker: its claim sees E0001's lease as the server's clock does.
      expect((await sandbox.run(['enqueue', 'second.jsonl', ...db])).code).toBe(0);
      const state = async (id: string) => {
        const [row] =
          await client`SELECT state, generation, attempts FROM onceq.messages WHERE event_id = ${id}`;
        return row as { state: string; generation: number; attempts: number };
      };
      for (let i = 0; i < 1200 && (await state('E0002')).state !== 'done'; i++) await Bun.sleep(50);
      expect(await state('E0002')).toMatchObject({ state: 'done', attempts: 1 });
      expect(await state('E0001')).toEqual({ state: 'leased', generation: 1, attempts: 1 });
      // The first claimer still holds its lease: its completion is recorded.
      const completed = await sandbox.run(['complete', 'E0001', '--generation', '1', ...db]);
      expect(completed.code).toBe(0);
      expect(await state('E0001')).toMatchObject({ state: 'done', attempts: 1 });
      worker.signal('SIGTERM');
      expect(await worker.exited(60_000)).toBe(0);
    } finally {
      await client.close();
      try {
        worker?.signal('SIGTERM');
      } catch {
        // Already exited.
      }
      await worker?.exited(30_000).catch(() => {});
      sandbox.cleanup();
    }
  }, 180_000);
});
