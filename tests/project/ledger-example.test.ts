/**
 * The worked example, examples/ledger/: an application with its own tables (entries and
 * balances, refunds, three currencies, amounts past 2^53) fed by a source that repeats
 * events. Run through the library, through the compiled binary's `onceq worker
 * --handler` from a directory outside the repository, and under the kill storm; each
 * time its check script must find every balance exact. And the check can fail.
 */
import { Database } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { deliveries } from '../../examples/ledger/source.ts';
import { onPostgres } from '../support/backends.ts';
import {
  type KillStormReport,
  killStorm,
  postgresLiveLeases,
  sqliteLiveLeases,
} from '../support/kill-storm.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import { runProcess } from '../support/spawn.ts';
import { rng } from '../support/storm.ts';

// Real processes (a binary build, a storm) on a loaded machine: generous bounds, and
// every wait is for a condition.
setDefaultTimeout(300_000);

const ROOT = resolve(import.meta.dir, '..', '..');
const LEDGER = join(ROOT, 'examples', 'ledger');
const HANDLER = join(LEDGER, 'handler.ts');

const SEED = Number(process.env.ONCEQ_STORM_SEED ?? Date.now() % 1_000_000);

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'onceq-ledger-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bun(args: string[], cwd = dir) {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  delete env.CI;
  return runProcess(['bun', ...args], { cwd, env });
}

async function check(target: string) {
  return bun([join(LEDGER, 'check.ts'), target]);
}

describe('the ledger example', () => {
  test('through the library on SQLite: balances exact; repeats counted, not applied', async () => {
    const db = join(dir, 'library.db');
    const r = await bun([join(LEDGER, 'app.ts'), db]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ done: 60, dead: 0, exact: true });
    expect(JSON.parse(r.stdout).duplicates).toBeGreaterThan(10);
    expect((await check(db)).code).toBe(0);
  });

  test('the check fails when one balance is off by one minor unit, naming it', async () => {
    const db = join(dir, 'tampered.db');
    expect((await bun([join(LEDGER, 'app.ts'), db])).code).toBe(0);
    const sqlite = new Database(db);
    sqlite.run(
      "UPDATE ledger_balances SET balance_minor = balance_minor + 1 WHERE account = 'acct_1' AND currency = 'USD'",
    );
    sqlite.close();
    const r = await check(db);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ledger check: balance acct_1 USD: -?\d+, expected -?\d+\n$/);
  });

  onPostgres('the ledger example through the library', () => {
    test('through the library on PostgreSQL: balances exact', async () => {
      const database = scratchDatabase('onceq_ledger');
      await database.create();
      try {
        const r = await bun([join(LEDGER, 'app.ts'), database.url]);
        expect([r.code, r.stderr]).toEqual([0, '']);
        expect(JSON.parse(r.stdout)).toMatchObject({ done: 60, exact: true });
      } finally {
        await database.drop();
      }
    });
  });

  test('through the compiled binary: onceq worker --handler, from a directory outside the repository', async () => {
    const bin = join(dir, 'bin', 'onceq');
    const built = await runProcess(['bash', join(ROOT, 'scripts', 'build.sh'), bin], { cwd: ROOT });
    expect(built.code).toBe(0);
    // The application's folder: the handler module and what it imports, nothing else.
    const app = join(dir, 'shop');
    mkdirSync(join(app, 'ledger'), { recursive: true });
    for (const file of ['handler.ts', 'tables.ts']) {
      copyFileSync(join(LEDGER, file), join(app, 'ledger', file));
    }
    const db = join(app, 'ledger.db');
    expect((await bun([join(LEDGER, 'setup.ts'), db])).code).toBe(0);
    const env: Record<string, string | undefined> = { ...process.env };
    delete env.ONCEQ_DB;
    delete env.CI;
    for (const [i, batch] of deliveries().entries()) {
      writeFileSync(join(app, `deliveries-${i}.jsonl`), batch);
      const r = await runProcess([bin, 'enqueue', `deliveries-${i}.jsonl`, '--db', db], {
        cwd: app,
        env,
      });
      expect(r.code).toBe(0);
    }
    const worker = Bun.spawn([bin, 'worker', '--handler', './ledger/handler.ts', '--db', db], {
      cwd: app,
      env,
      stdout: 'pipe',
      stderr: 'pipe',
    });
    try {
      // Wait (bounded) until the worker has done every message, read beside it.
      let done = 0;
      for (let i = 0; i < 1200 && done < 60; i++) {
        await Bun.sleep(100);
        const sqlite = new Database(db, { readonly: true });
        done = (
          sqlite.query("SELECT count(*) AS n FROM messages WHERE state = 'done'").get() as {
            n: number;
          }
        ).n;
        sqlite.close();
      }
      expect(done).toBe(60);
    } finally {
      worker.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
    expect(await new Response(worker.stderr).text()).toContain(
      'handler ledger-1 (from ./ledger/handler.ts)',
    );
    const r = await check(db);
    expect([r.code, r.stderr]).toEqual([0, '']);
    // The application's tables beside onceq's leave the store healthy: doctor names them.
    const doctor = await runProcess([bin, 'doctor', '--db', db], { cwd: app, env });
    expect([doctor.code, doctor.stderr]).toEqual([0, '']);
    expect(doctor.stdout).toContain(
      "info: schema_drift: tables and views that are not onceq's, not checked: ledger_balances, ledger_entries",
    );
  });
});

function stormSummary(name: string, report: KillStormReport): string {
  return `${name} ledger kill storm: ${report.runs.length} runs, ${report.killed} killed by SIGKILL (${report.killsAtLiveLeases} of ${report.kills} kills at live leases), seed ${SEED}`;
}

describe('the ledger example under the kill storm', () => {
  test('SQLite: work processes with the ledger handler SIGKILLed at random; balances exact', async () => {
    const db = join(dir, 'storm.db');
    expect((await bun([join(LEDGER, 'setup.ts'), db])).code).toBe(0);
    const report = await killStorm({
      db,
      events: 60,
      workers: 3,
      runsPerWorker: 4,
      kills: 1,
      batches: deliveries(),
      workFlags: ['--handler', HANDLER],
      liveLeases: sqliteLiveLeases(db),
      random: rng(SEED),
    });
    console.log(stormSummary('SQLite', report));
    expect(report.killed).toBeGreaterThan(0);
    expect(report.breaches).toEqual([]);
    const r = await check(db);
    expect([r.code, r.stderr]).toEqual([0, '']);
  });

  onPostgres('the ledger example under the kill storm', () => {
    test('PostgreSQL: the same storm; balances exact', async () => {
      const database = scratchDatabase('onceq_ledger_storm');
      await database.create();
      try {
        expect((await bun([join(LEDGER, 'setup.ts'), database.url])).code).toBe(0);
        const report = await killStorm({
          db: database.url,
          events: 60,
          workers: 3,
          runsPerWorker: 4,
          kills: 1,
          batches: deliveries(),
          workFlags: ['--handler', HANDLER],
          liveLeases: postgresLiveLeases(database.url),
          random: rng(SEED + 7),
        });
        console.log(stormSummary('PostgreSQL', report));
        expect(report.killed).toBeGreaterThan(0);
        expect(report.breaches).toEqual([]);
        const r = await check(database.url);
        expect([r.code, r.stderr]).toEqual([0, '']);
      } finally {
        await database.drop();
      }
    });
  });
});
