/**
 * PostgreSQL under fire, with real `onceq` processes: backends terminated with
 * `pg_terminate_backend`, and the server restarted with `pg_ctl restart -m immediate`,
 * while `onceq enqueue` and three `onceq work` loops run. Every run must end with exit 0
 * or exit 1 and exactly one `onceq:` sentence, never a stack trace or a code frame;
 * after a calm drain nothing is lost or doubled.
 *
 * The terminate storm uses a fresh database on the suite's cluster (DATABASE_URL). The
 * restart storm starts a **second, dedicated throwaway cluster** (scripts/pg-cluster.sh
 * with its own state file and ports), so the shared cluster is never restarted, and stops
 * it in afterAll even when a test failed. Without PostgreSQL binaries the restart storm
 * is skipped with a visible reason, except under CI or ONCEQ_REQUIRE_POSTGRES=1.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describePostgres, postgresRequired } from '../support/backends.ts';
import {
  clusterState,
  expectedFacts,
  freshDatabase,
  pgStorm,
  type StormReport,
  storeFacts,
  terminateBackends,
} from '../support/pg-storm.ts';
import { poolerAvailable, startPooler } from '../support/pgbouncer.ts';
import { runProcess } from '../support/spawn.ts';
import { rng } from '../support/storm.ts';
import { startWorker } from '../support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const REQUIRED = postgresRequired();
const CLUSTER_SCRIPT = resolve(import.meta.dir, '../../scripts/pg-cluster.sh');
const EVENTS = 100;
/** Generous: on a loaded two-core machine one CLI run can take seconds. */
const STORM_TIMEOUT_MS = 240_000;
const SEED = Number(process.env.ONCEQ_STORM_SEED ?? Date.now() % 1_000_000);
/**
 * Disruptions each storm waits for: its loops run until they have landed (bounded), so
 * the outcome does not depend on how fast the machine finishes the planned runs.
 */
const TERMINATIONS = 3;
const RESTARTS = 2;

function describeReport(report: StormReport): string {
  return `${report.runs.length} runs, ${report.landed} disruptions landed (${report.disruptions} in all), ${report.refused} runs exited 1, ${report.breaches.length} broke the one-sentence contract (${report.traceLines} stack-trace lines), seed ${SEED}`;
}

function expectContractKept(report: StormReport): void {
  // The breaches themselves, so a failure shows the offending stderr.
  expect(report.breaches).toEqual([]);
  expect(report.traceLines).toBe(0);
}

describePostgres('storm: PostgreSQL backends terminated', (url) => {
  test(
    'enqueue and three work loops under pg_terminate_backend: one sentence or success, nothing lost or doubled',
    async () => {
      const database = await freshDatabase(url);
      try {
        const random = rng(SEED);
        const report = await pgStorm({
          url: database.url,
          events: EVENTS,
          perFile: 50,
          workers: 3,
          runsPerWorker: 4,
          disruptions: TERMINATIONS,
          disrupt: () => terminateBackends(url, database.name),
          jitterMs: 300,
          random,
        });
        console.log(`terminate storm: ${describeReport(report)}`);
        expect(report.landed).toBe(TERMINATIONS);
        expectContractKept(report);
        expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
      } finally {
        await database.drop();
      }
    },
    STORM_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------
// The terminate storm again, every CLI run through PgBouncer in transaction mode.

const poolerBinary = poolerAvailable();
const POOLER_SKIP = (!DATABASE_URL && !REQUIRED) || (poolerBinary !== true && !REQUIRED);
if (poolerBinary !== true && !REQUIRED) {
  console.warn(`storm-postgres.test.ts: pooler storm skipped: ${poolerBinary}`);
}

describe.skipIf(POOLER_SKIP)('storm: through PgBouncer in transaction mode', () => {
  test(
    'enqueue and three work loops through the pooler while its server connections are terminated: one sentence or success, nothing lost or doubled',
    async () => {
      if (!DATABASE_URL)
        throw new Error('DATABASE_URL is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)');
      if (poolerBinary !== true) throw new Error(poolerBinary);
      const database = await freshDatabase(DATABASE_URL);
      const pooler = await startPooler(DATABASE_URL, 'transaction');
      try {
        const report = await pgStorm({
          url: pooler.urlFor(database.name),
          events: EVENTS,
          perFile: 50,
          workers: 3,
          runsPerWorker: 4,
          disruptions: TERMINATIONS,
          disrupt: () => terminateBackends(DATABASE_URL, database.name, 'all'),
          jitterMs: 300,
          random: rng(SEED + 2),
        });
        console.log(`pooler storm: ${describeReport(report)}`);
        expect(report.landed).toBe(TERMINATIONS);
        expectContractKept(report);
        expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
      } finally {
        await pooler.stop();
        await database.drop();
      }
    },
    STORM_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------
// The restart storm: its own cluster.

const restartState = join(mkdtempSync(join(tmpdir(), 'onceq-storm-pg-')), 'pg.state');
let restartUrl: string | undefined;
/** PostgreSQL server binaries where scripts/pg-cluster.sh looks for them. */
const HAVE_BINARIES =
  Bun.spawnSync(['bash', '-c', 'command -v initdb || ls /usr/lib/postgresql/*/bin/initdb'], {
    stdout: 'ignore',
    stderr: 'ignore',
  }).exitCode === 0;
const RESTART_SKIP = (!DATABASE_URL && !REQUIRED) || (!HAVE_BINARIES && !REQUIRED);
if (!HAVE_BINARIES && !REQUIRED) {
  console.warn('storm-postgres.test.ts: restart storm skipped: no PostgreSQL server binaries');
}

function clusterCommand(command: 'start' | 'stop') {
  const firstPort = Number(process.env.ONCEQ_PG_FIRST_PORT ?? 54330) + 20;
  return runProcess(['bash', CLUSTER_SCRIPT, command], {
    env: { ...process.env, ONCEQ_PG_STATE: restartState, ONCEQ_PG_FIRST_PORT: String(firstPort) },
  });
}

/** initdb + start on a loaded machine can take well over bun's 5 s hook default. */
const CLUSTER_TIMEOUT_MS = 180_000;

beforeAll(async () => {
  if (RESTART_SKIP) return;
  const started = await clusterCommand('start');
  if (started.code === 0) restartUrl = started.stdout.trim();
  else throw new Error(`could not start the restart cluster:\n${started.stderr}`);
}, CLUSTER_TIMEOUT_MS);

afterAll(async () => {
  await clusterCommand('stop');
  rmSync(resolve(restartState, '..'), { recursive: true, force: true });
}, CLUSTER_TIMEOUT_MS);

/** `pg_ctl restart -m immediate` of the dedicated cluster (as its OS owner when root). */
async function restartServer(): Promise<number> {
  const { dir, bindir } = clusterState(restartState);
  const pgCtl = [join(bindir, 'pg_ctl'), '-D', join(dir, 'data'), '-l', join(dir, 'server.log')];
  const owner = process.env.ONCEQ_PG_OS_USER ?? 'postgres';
  const asOwner = process.getuid?.() === 0 ? ['runuser', '-u', owner, '--'] : [];
  const result = await runProcess(
    [...asOwner, ...pgCtl, '-m', 'immediate', '-w', '-t', '60', 'restart'],
    { cwd: dir },
  );
  if (result.code !== 0) throw new Error(`pg_ctl restart failed: ${result.stderr}${result.stdout}`);
  return 1;
}

describe.skipIf(RESTART_SKIP)('storm: PostgreSQL server restarted', () => {
  test(
    'enqueue and three work loops under pg_ctl restart -m immediate: one sentence or success, nothing lost or doubled',
    async () => {
      if (restartUrl === undefined) throw new Error('the restart cluster did not start');
      const database = await freshDatabase(restartUrl);
      try {
        const report = await pgStorm({
          url: database.url,
          events: EVENTS,
          perFile: 50,
          workers: 3,
          runsPerWorker: 4,
          disruptions: RESTARTS,
          disrupt: restartServer,
          jitterMs: 800,
          random: rng(SEED + 1),
        });
        console.log(`restart storm: ${describeReport(report)}`);
        expect(report.landed).toBe(RESTARTS);
        expectContractKept(report);
        expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
      } finally {
        await database.drop();
      }
    },
    STORM_TIMEOUT_MS,
  );
});

describe.skipIf(RESTART_SKIP)('LISTEN after a server restart', () => {
  test(
    'a worker re-establishes LISTEN after pg_ctl restart, and its metrics say when notifications are live again',
    async () => {
      if (restartUrl === undefined) throw new Error('the restart cluster did not start');
      const database = await freshDatabase(restartUrl);
      const cwd = mkdtempSync(join(tmpdir(), 'onceq-listen-'));
      const worker = startWorker(['--db', database.url, '--metrics-port', '0'], cwd);
      try {
        await worker.waitForLog(
          /serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/,
          60_000,
        );
        const port = /serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/.exec(
          worker.stderr(),
        )?.[1];
        const live = async () => {
          try {
            const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
            return /^onceq_notifications_live (\d)/m.exec(text)?.[1] ?? null;
          } catch {
            return null;
          }
        };
        /** Waits for the metric to read `want` (the worker reports each change as it happens). */
        const until = async (want: string) => {
          for (let i = 0; i < 600; i++) {
            if ((await live()) === want) return;
            await Bun.sleep(100);
          }
          throw new Error(`onceq_notifications_live never read ${want}\n${worker.stderr()}`);
        };
        await until('1');
        await restartServer();
        await worker.waitForLog(/LISTEN connection to PostgreSQL at .* lost/, 60_000);
        await until('1');
        // Once back, an enqueue wakes it through the notification.
        const enqueued = await runProcess(
          [
            'bun',
            resolve(import.meta.dir, '../../apps/cli/src/bin.ts'),
            'enqueue',
            resolve(import.meta.dir, '../../examples/demo.jsonl'),
            '--db',
            database.url,
          ],
          { cwd },
        );
        expect(enqueued.code).toBe(0);
        await worker.waitForLog(/totals: 3 done, 0 retried, 1 dead/, 60_000);
        expect(worker.stderr().match(/LISTEN connection to PostgreSQL at .* lost/g)).toHaveLength(
          1,
        );
      } finally {
        worker.signal('SIGTERM');
        await worker.exited(30_000);
        rmSync(cwd, { recursive: true, force: true });
        await database.drop();
      }
    },
    STORM_TIMEOUT_MS,
  );
});
