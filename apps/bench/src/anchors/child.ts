/**
 * One worker process of an anchor queue (`bun anchors/child.ts '<json spec>'`), with the
 * same start barrier and result line as worker-child.ts, so onceq and the queues people
 * use today are timed the same way: from the barrier to the last job finished.
 *
 * Each anchor runs the v1 business rule on the payload (category and amount checks), with
 * its own recommended fast settings; what each one writes per job is in {@link ANCHORS}.
 */
import { Database } from 'bun:sqlite';
import { errorText, wallMs } from '../util.ts';
import type { ChildResult } from '../worker-child.ts';
import type { AnchorSpec } from './specs.ts';

const V1 = new Set(['book', 'pen', 'bag']);

/** The v1 rule: what every implementation computes per message. */
function effectOf(payload: { category?: unknown; amount_cents?: unknown }) {
  const { category, amount_cents } = payload;
  if (typeof category !== 'string' || !V1.has(category) || !Number.isInteger(amount_cents))
    throw new Error(`invalid payload ${JSON.stringify(payload)}`);
  return { category, amountCents: amount_cents as number };
}

/** CPU time of this process so far, ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** CPU ms at the start barrier: the result reports what the measured window used. */
let cpuAtGo = 0;

async function waitForGo(): Promise<void> {
  for await (const _ of console) {
    cpuAtGo = cpuMs();
    return;
  }
  process.exit(3);
}

function result(startMs: number, done: number, error: string | null, endMs = wallMs()) {
  return {
    startMs,
    endMs,
    claimed: done,
    done,
    lost: 0,
    failed: 0,
    latencies: [],
    transactions: 0,
    busyRetries: 0,
    cpuMs: cpuMs() - cpuAtGo,
    error,
  } satisfies ChildResult;
}

/** plainjob: its own claim (`getAndMarkJobAsProcessing`) and `markJobAsDone`, per job. */
async function runPlainjob(spec: AnchorSpec): Promise<ChildResult> {
  const { bun, defineQueue } = await import('plainjob');
  const db = new Database(spec.target, { strict: true });
  const queue = defineQueue({ connection: bun(db), maintenanceInterval: 3_600_000 });
  process.stdout.write('ready\n');
  await waitForGo();
  const startMs = wallMs();
  let done = 0;
  let error: string | null = null;
  try {
    for (;;) {
      const claimed = queue.getAndMarkJobAsProcessing('pay');
      if (claimed === undefined) break;
      const job = queue.getJobById(claimed.id);
      effectOf(JSON.parse(job?.data ?? '{}'));
      queue.markJobAsDone(claimed.id);
      done++;
    }
  } catch (e) {
    error = errorText(e);
  }
  const endMs = wallMs();
  queue.close();
  return result(startMs, done, error, endMs);
}

/**
 * graphile-worker: its runner with `concurrency` jobs in flight and, when `localQueue`
 * is set, that many jobs fetched and locked per round trip, completions batched per
 * `completionBatchDelay`. Its task writes nothing (a task's queries cannot share the
 * transaction that completes the job), so it does less than onceq per message. The run
 * ends when its jobs table is seen empty: with batched completion the last task finishes
 * before its completion is committed, and onceq is timed to its last commit too.
 */
async function runGraphile(spec: AnchorSpec): Promise<ChildResult> {
  const { run } = await import('graphile-worker');
  const { Pool } = await import('pg');
  const pool = new Pool({ connectionString: spec.target, max: 1 });
  process.stdout.write('ready\n');
  await waitForGo();
  const startMs = wallMs();
  let done = 0;
  let error: string | null = null;
  try {
    const runner = await run({
      connectionString: spec.target,
      schema: spec.schema,
      concurrency: spec.concurrency,
      // Its documented advice: the pool at least concurrency + 1 (default 10).
      maxPoolSize: Math.max(10, spec.concurrency + 1),
      noHandleSignals: true,
      pollInterval: 50,
      logger: quietLogger(),
      preset: {
        worker: {
          ...(spec.localQueue > 0 ? { localQueue: { size: spec.localQueue } } : {}),
          completeJobBatchDelay: spec.completionBatchDelay,
          failJobBatchDelay: spec.completionBatchDelay,
        },
      },
      taskList: {
        pay: async (payload) => {
          effectOf(payload as Record<string, unknown>);
          done++;
        },
      },
    });
    for (;;) {
      await Bun.sleep(5);
      const { rows } = await pool.query(
        `SELECT NOT EXISTS (SELECT 1 FROM ${spec.schema}._private_jobs) AS empty`,
      );
      if (rows[0].empty) break;
    }
    const endMs = wallMs();
    await runner.stop();
    await pool.end();
    return result(startMs, done, null, endMs);
  } catch (e) {
    error = errorText(e);
  }
  await pool.end();
  return result(startMs, done, error);
}

/**
 * pg-boss: `fetch` of `batch` jobs, then the effect rows and `complete` in one
 * transaction of the caller's (pg-boss's `db` option), the closest it comes to onceq's
 * effect + ACK. Stops when a fetch comes back empty.
 */
async function runPgBoss(spec: AnchorSpec): Promise<ChildResult> {
  const { PgBoss } = await import('pg-boss');
  const { Pool } = await import('pg');
  const pool = new Pool({ connectionString: spec.target, max: 2 });
  const boss = new PgBoss({
    connectionString: spec.target,
    schema: spec.schema,
    supervise: false,
    schedule: false,
    migrate: false,
    max: 2,
  });
  boss.on('error', () => {});
  await boss.start();
  process.stdout.write('ready\n');
  await waitForGo();
  const startMs = wallMs();
  let done = 0;
  let error: string | null = null;
  try {
    for (;;) {
      const jobs = await boss.fetch<Record<string, unknown>>('pay', { batchSize: spec.batch });
      if (jobs.length === 0) break;
      const effects = jobs.map((job) => ({ id: job.id, ...effectOf(job.data) }));
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO ${spec.schema}.effects (id, category, amount_cents)
           SELECT * FROM unnest($1::text[], $2::text[], $3::int[])`,
          [
            effects.map((e) => e.id),
            effects.map((e) => e.category),
            effects.map((e) => e.amountCents),
          ],
        );
        await boss.complete(
          'pay',
          jobs.map((j) => j.id),
          null,
          { db: { executeSql: (text, values) => client.query(text, values) } },
        );
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw e;
      } finally {
        client.release();
      }
      done += jobs.length;
    }
  } catch (e) {
    error = errorText(e);
  }
  const endMs = wallMs();
  await boss.stop({ graceful: false });
  await pool.end();
  return result(startMs, done, error, endMs);
}

function quietLogger() {
  // graphile-worker's Logger wants a scope factory; a no-op one keeps stdout for results.
  return new (require('graphile-worker').Logger)(() => () => {});
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as AnchorSpec;
  const run = { plainjob: runPlainjob, graphile: runGraphile, pgboss: runPgBoss }[spec.impl];
  const out = await run(spec).catch((e: unknown) => result(wallMs(), 0, errorText(e)));
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}
