/**
 * The connection budget on PostgreSQL, with real `onceq worker` processes on a cluster
 * of its own started with `max_connections = 20` (scripts/pg-cluster.sh, 30 ports above
 * ONCEQ_PG_FIRST_PORT):
 *
 * - an idle worker holds one connection, LISTEN included, whatever its concurrency;
 * - twelve default workers and a producer fit, directly and through PgBouncer in
 *   transaction mode: every valid event done exactly once, none dead of `lease_expired`;
 * - a refusal storm (the test takes every free slot, so no worker can grow its pool):
 *   the workers say so once and work on with the connection they hold, nothing dead of
 *   `lease_expired`, no store error;
 * - a worker refused its first connection waits for one, saying so once;
 * - a result whose worker lost its only connection on a full server is given back
 *   (attempt not spent) once a slot frees, never dead of `lease_expired`.
 *
 * At PostgreSQL's default `max_connections = 100` (a second cluster), the held-out shape:
 * 16, 32, 48 and 64 default workers started together, as a role without superuser
 * rights, on 20,000 events each (CONTRIBUTING.md). Skips without DATABASE_URL unless
 * ONCEQ_REQUIRE_POSTGRES=1 or CI.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  type ConnectionUse,
  enqueue,
  type Handler,
  openStore,
  Worker,
  type WorkerLog,
} from '@onceq/core';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { cliSandbox } from '../support/cli.ts';
import { batch, eventId, line, paid } from '../support/factories.ts';
import { freshDatabase } from '../support/pg-storm.ts';
import { type Pooler, poolerAvailable, startPooler } from '../support/pgbouncer.ts';
import { runProcess } from '../support/spawn.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const REQUIRED = process.env.ONCEQ_REQUIRE_POSTGRES === '1' || Boolean(process.env.CI);
const SKIP = !DATABASE_URL && !REQUIRED;
if (SKIP) console.warn('postgres-connection-budget.test.ts: skipped: DATABASE_URL is not set');

const CLUSTER_SCRIPT = resolve(import.meta.dir, '../../scripts/pg-cluster.sh');
const stateDir = mkdtempSync(join(tmpdir(), 'onceq-budget-pg-'));
const CLUSTER_TIMEOUT_MS = 180_000;

/** A cluster of this file's own with `maxConnections` slots; `stop()` deletes it. */
function clusterCommand(command: 'start' | 'stop', maxConnections: number, offset: number) {
  const firstPort = Number(process.env.ONCEQ_PG_FIRST_PORT ?? 54330) + offset;
  return runProcess(['bash', CLUSTER_SCRIPT, command], {
    env: {
      ...process.env,
      ONCEQ_PG_STATE: join(stateDir, `pg-${maxConnections}.state`),
      ONCEQ_PG_FIRST_PORT: String(firstPort),
      ONCEQ_PG_MAX_CONNECTIONS: String(maxConnections),
    },
  });
}

/** Events 1..count, every `rejectEvery`-th of a category v1 rejects (about 3 %). */
function writeEvents(dir: string, count: number, rejectEvery = 33): string {
  const lines: string[] = [];
  for (let n = 1; n <= count; n++) {
    const category = n % rejectEvery === 0 ? 'toy' : (['book', 'pen', 'bag'][n % 3] as string);
    lines.push(line(eventId(n), paid(category, 100 + n)));
  }
  const file = join(dir, 'events.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** What the store holds once the workers are done, by plain SQL. */
async function settle(
  client: SQL,
  count: number,
  rejectEvery = 33,
): Promise<{ done: number; invalidDead: number; otherDead: string[]; effects: number }> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const [{ done, dead }] = await client.unsafe(
      `SELECT count(*) FILTER (WHERE state = 'done')::int AS done,
              count(*) FILTER (WHERE state = 'dead')::int AS dead
       FROM onceq.messages`,
    );
    if (done + dead === count) break;
    if (Date.now() > deadline) throw new Error(`only ${done} done and ${dead} dead of ${count}`);
    await Bun.sleep(100);
  }
  const dead: { event_id: string; last_error_code: string }[] = await client.unsafe(
    `SELECT event_id, last_error_code FROM onceq.messages WHERE state = 'dead' ORDER BY event_id`,
  );
  const otherDead = dead
    .filter((r) => r.last_error_code !== 'invalid_payload')
    .map((r) => `${r.event_id}: ${r.last_error_code}`);
  for (const r of dead) {
    if (Number(r.event_id.slice(1)) % rejectEvery !== 0) otherDead.push(`${r.event_id} is valid`);
  }
  const [{ n, d }] = await client.unsafe(
    'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d FROM onceq.effects',
  );
  expect(n).toBe(d);
  const [{ done }] = await client.unsafe(
    `SELECT count(*)::int AS done FROM onceq.messages WHERE state = 'done'`,
  );
  return {
    done,
    invalidDead: dead.length - otherDead.length,
    otherDead,
    effects: n,
  };
}

/** Connections of database `name` held by onceq processes (the pool's and LISTEN's). */
async function onceqConnections(client: SQL, name: string): Promise<number> {
  const [{ n }] = await client.unsafe(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = $1 AND application_name LIKE 'onceq%' AND pid <> pg_backend_pid()`,
    [name],
  );
  return n;
}

/** Waits until `read()` returns `want` (bounded), then returns it. */
async function until(read: () => Promise<number>, want: number, what: string): Promise<number> {
  const deadline = Date.now() + 30_000;
  let last = await read();
  while (last !== want) {
    if (Date.now() > deadline) throw new Error(`${what}: ${last}, never ${want}`);
    await Bun.sleep(50);
    last = await read();
  }
  return last;
}

async function stopAll(workers: readonly WorkerProcess[]): Promise<number[]> {
  for (const worker of workers) {
    try {
      worker.signal('SIGTERM');
    } catch {
      // Already exited.
    }
  }
  return Promise.all(workers.map((w) => w.exited(60_000)));
}

/** Starts `n` workers with `args` and waits until each says it started. */
async function startWorkers(n: number, args: string[], cwd: string): Promise<WorkerProcess[]> {
  const workers: WorkerProcess[] = [];
  for (let i = 0; i < n; i++) workers.push(startWorker(args, cwd));
  for (const worker of workers) await worker.waitForLog(/worker started/, 120_000);
  return workers;
}

/** Opens connections to `url` into `hogs` until the server refuses one: every free slot is taken. */
async function takeEverySlot(url: string, hogs: SQL[]): Promise<void> {
  for (;;) {
    const client = new SQL(url, { max: 1 });
    try {
      await client`SELECT 1`;
    } catch (error) {
      await client.close().catch(() => {});
      expect(String((error as Error).message)).toMatch(/too many clients|53300/);
      return;
    }
    hogs.push(client);
  }
}

/** What no worker may print about its connections: a store error, a failed beat, a refusal. */
const CONNECTION_TROUBLE = /store_error|heartbeat_failed|refuses more connections|too many clients/;
/** The lines no worker may print while it has a connection: the above, or a lost lease. */
const TROUBLE = new RegExp(`${CONNECTION_TROUBLE.source}|lease_lost`);

afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe.skipIf(SKIP)('connections on a server with max_connections = 20', () => {
  let url: string | undefined;
  beforeAll(async () => {
    const started = await clusterCommand('start', 20, 30);
    if (started.code !== 0) throw new Error(`could not start the cluster:\n${started.stderr}`);
    url = started.stdout.trim();
  }, CLUSTER_TIMEOUT_MS);
  afterAll(async () => {
    await clusterCommand('stop', 20, 30);
  }, CLUSTER_TIMEOUT_MS);

  test('an idle worker holds one connection, LISTEN included, at concurrency 1 and 4', async () => {
    const database = await freshDatabase(url as string);
    const sandbox = cliSandbox();
    const admin = new SQL(database.url, { max: 1 });
    const workers: WorkerProcess[] = [];
    try {
      expect((await sandbox.run(['work', '--db', database.url])).code).toBe(0);
      workers.push(...(await startWorkers(1, ['--db', database.url], sandbox.cwd)));
      workers.push(
        ...(await startWorkers(1, ['--db', database.url, '--concurrency', '4'], sandbox.cwd)),
      );
      for (const worker of workers) {
        expect(worker.stderr()).toMatch(/worker started .*LISTEN\/NOTIFY/);
      }
      // The start-up probe of LISTEN closes its connection: then one each is left.
      await until(() => onceqConnections(admin, database.name), 2, 'connections of 2 idle workers');

      // A notification still wakes them: the demo's events are done, the toy dead.
      const enqueued = await sandbox.run([
        'enqueue',
        resolve(import.meta.dir, '../../examples/demo.jsonl'),
        '--db',
        database.url,
      ]);
      expect(enqueued.code).toBe(0);
      await Promise.race(workers.map((w) => w.waitForLog(/E0004/, 60_000)));
      expect(await stopAll(workers)).toEqual([0, 0]);
      for (const worker of workers) expect(worker.stderr()).not.toMatch(TROUBLE);
    } finally {
      await stopAll(workers);
      await admin.close();
      await database.drop();
      sandbox.cleanup();
    }
  }, 240_000);

  for (const through of ['directly', 'through PgBouncer in transaction mode'] as const) {
    const pooled = through !== 'directly';
    test.skipIf(pooled && poolerAvailable() !== true && !REQUIRED)(
      `12 default workers and a producer ${through}: every valid event done once, none dead of lease_expired`,
      async () => {
        const EVENTS = 1000;
        const database = await freshDatabase(url as string);
        const sandbox = cliSandbox();
        let pooler: Pooler | undefined;
        const workers: WorkerProcess[] = [];
        const admin = new SQL(database.url, { max: 1 });
        try {
          if (pooled) {
            const available = poolerAvailable();
            if (available !== true) throw new Error(available);
            pooler = await startPooler(url as string, 'transaction', 8);
          }
          const target = pooler === undefined ? database.url : pooler.urlFor(database.name);
          expect((await sandbox.run(['work', '--db', target])).code).toBe(0);
          workers.push(...(await startWorkers(12, ['--db', target], sandbox.cwd)));
          const file = writeEvents(sandbox.cwd, EVENTS);
          const enqueued = await sandbox.run(['enqueue', '--split', file, '--db', target]);
          expect(enqueued.stderr).toBe('');
          expect(enqueued.code).toBe(0);

          const facts = await settle(admin, EVENTS);
          expect(facts.otherDead).toEqual([]);
          expect(facts.done).toBe(EVENTS - Math.floor(EVENTS / 33));
          expect(facts.effects).toBe(facts.done);
          expect(await stopAll(workers)).toEqual(workers.map(() => 0));
          for (const worker of workers) expect(worker.stderr()).not.toMatch(TROUBLE);
        } finally {
          await stopAll(workers);
          await pooler?.stop();
          await admin.close();
          await database.drop();
          sandbox.cleanup();
        }
      },
      480_000,
    );
  }

  test('a pool refused a connection runs every statement on the one it holds, and says so', async () => {
    const database = await freshDatabase(url as string);
    const hogs: SQL[] = [];
    const store = await openStore(`${database.url}?pool_max=3`);
    try {
      const shorts: ConnectionUse[] = [];
      store.connections?.onShort((use) => shorts.push(use));
      await takeEverySlot(database.url, hogs);
      // Three statements at once want three connections; the server has none to give.
      const slept = await Promise.all(
        [1, 2, 3].map((n) =>
          store.read(
            async (x) =>
              (await x.query<{ n: number }>(`SELECT pg_sleep(0.1), ${n} AS n`)).rows[0]?.n,
          ),
        ),
      );
      expect(slept).toEqual([1, 2, 3]);
      const use = store.connections?.use();
      expect(use).toMatchObject({ held: 1, max: 3, short: true });
      expect(use?.refused).toBeGreaterThan(0);
      expect(shorts.length).toBeGreaterThan(0);
    } finally {
      await store.close();
      await Promise.all(hogs.map((h) => h.close().catch(() => {})));
      await database.drop();
    }
  }, 120_000);

  test('a result the worker cannot write for want of a connection is given back, attempt not spent, never dead of lease_expired', async () => {
    const database = await freshDatabase(url as string);
    const hogs: SQL[] = [];
    // One attempt: had the lease run out, the claim's recovery would make it dead.
    const store = await openStore(database.url, { protocol: { maxAttempts: 1 } });
    const notes: string[] = [];
    const log: WorkerLog = { write: (event, message) => notes.push(`${event}: ${message}`) };
    const running = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    const handler: Handler = async (payload, context) => {
      running.resolve();
      await gate.promise;
      return handlers.v1(payload, context);
    };
    const worker = new Worker(store, handler, { log, batch: 1 });
    try {
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      await worker.start();
      await running.promise;
      // The server fills up and the worker's one connection goes: it holds none and may
      // open none while its handler still runs.
      await takeEverySlot(database.url, hogs);
      const admin = hogs[0] as SQL;
      await admin.unsafe(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND application_name LIKE 'onceq%'`,
        [database.name],
      );
      await until(() => onceqConnections(admin, database.name), 0, 'connections of the worker');
      await takeEverySlot(database.url, hogs);
      gate.resolve();
      const noted = async (pattern: RegExp) =>
        until(async () => (notes.some((n) => pattern.test(n)) ? 1 : 0), 1, `a ${pattern} note`);
      await noted(/^store_error: .*refuses more connections/);
      expect(notes.some((n) => n.startsWith('release:'))).toBe(false);

      // A slot comes free: the result is given back, then claimed again and done.
      await (hogs.pop() as SQL).close();
      await noted(/^release: gave back 1 message whose results could not reach the store/);
      const done = async () =>
        (
          await admin.unsafe(
            `SELECT count(*)::int AS n FROM onceq.messages WHERE state = 'done' AND attempts = 1`,
          )
        )[0].n as number;
      await until(done, 1, 'E0001 done at its first attempt');
      expect(worker.summary).toMatchObject({ done: 1, released: 1, lost: 0 });
      expect((await worker.stop()).graceful).toBe(true);
    } finally {
      await worker.stop();
      await store.close();
      await Promise.all(hogs.map((h) => h.close().catch(() => {})));
      await database.drop();
    }
  }, 240_000);

  test('a worker refused its first connection waits for one and says so once; a command exits 1', async () => {
    const database = await freshDatabase(url as string);
    const sandbox = cliSandbox();
    const hogs: SQL[] = [];
    let worker: WorkerProcess | undefined;
    try {
      expect((await sandbox.run(['work', '--db', database.url])).code).toBe(0);
      await takeEverySlot(database.url, hogs);
      // A command has nothing to wait for: one sentence, exit 1.
      const status = await sandbox.run(['status', '--db', database.url]);
      expect(status.code).toBe(1);
      expect(status.stderr.trim()).toMatch(
        /^onceq: cannot connect to PostgreSQL at .*: the server refuses more connections \(max_connections is reached\)$/,
      );
      worker = startWorker(['--db', database.url], sandbox.cwd);
      await worker.waitForLog(/connection_wait/, 60_000);
      expect(worker.stderr()).toMatch(
        /refuses more connections .*; waiting for a free connection, trying again every 1 s/,
      );
      expect(worker.stderr()).not.toMatch(/worker started/);
      // A slot comes free: the worker starts and works.
      await (hogs.pop() as SQL).close();
      await worker.waitForLog(/worker started/, 120_000);
      expect(worker.stderr().match(/connection_wait/g)).toHaveLength(1);
      expect(await stopAll([worker])).toEqual([0]);
      expect(worker.stderr().split(/worker started/)[1]).not.toMatch(TROUBLE);
    } finally {
      if (worker !== undefined) await stopAll([worker]);
      await Promise.all(hogs.map((h) => h.close().catch(() => {})));
      await database.drop();
      sandbox.cleanup();
    }
  }, 240_000);

  test('a refusal storm: workers that cannot grow say so once and work on with what they hold', async () => {
    const EVENTS = 660;
    const WORKERS = 4;
    const database = await freshDatabase(url as string);
    const sandbox = cliSandbox();
    const workers: WorkerProcess[] = [];
    const hogs: SQL[] = [];
    const hogAll = () => takeEverySlot(database.url, hogs);
    try {
      expect((await sandbox.run(['work', '--db', database.url])).code).toBe(0);
      const args = ['--db', database.url, '--concurrency', '4', '--batch', '10'];
      workers.push(...(await startWorkers(WORKERS, args, sandbox.cwd)));
      await hogAll();
      const admin = hogs[0] as SQL;
      await until(() => onceqConnections(admin, database.name), WORKERS, 'idle workers');
      // One slot for the producer, taken back once it is done.
      await (hogs.pop() as SQL).close();
      const file = writeEvents(sandbox.cwd, EVENTS);
      const enqueued = await sandbox.run(['enqueue', '--split', file, '--db', database.url]);
      expect(enqueued.code).toBe(0);
      await hogAll();

      const facts = await settle(admin, EVENTS);
      expect(facts.otherDead).toEqual([]);
      expect(facts.done).toBe(EVENTS - Math.floor(EVENTS / 33));
      // Refusals happened: each worker that was refused said so once, and none failed.
      const short = workers.filter((w) => /connections_short/.test(w.stderr()));
      expect(short.length).toBeGreaterThan(0);
      for (const worker of short) {
        expect(worker.stderr().match(/PostgreSQL refused a new connection/g)).toHaveLength(1);
      }
      expect(await stopAll(workers)).toEqual(workers.map(() => 0));
      for (const worker of workers) expect(worker.stderr()).not.toMatch(TROUBLE);
    } finally {
      await stopAll(workers);
      await Promise.all(hogs.map((h) => h.close().catch(() => {})));
      await database.drop();
      sandbox.cleanup();
    }
  }, 480_000);
});

/**
 * A role without superuser rights owning `database` (and the URL it connects with), so
 * the workers get the slots a non-superuser gets: `max_connections` less the three
 * PostgreSQL reserves for superusers.
 */
async function asPlainRole(
  adminUrl: string,
  database: { url: string; name: string },
): Promise<string> {
  const admin = new SQL(adminUrl, { max: 1 });
  try {
    await admin.unsafe(
      `DO $$ BEGIN
         IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'onceq_plain') THEN
           CREATE ROLE onceq_plain LOGIN NOSUPERUSER;
         END IF;
       END $$`,
    );
    await admin.unsafe(`ALTER DATABASE ${database.name} OWNER TO onceq_plain`);
  } finally {
    await admin.close();
  }
  const parsed = new URL(database.url);
  parsed.username = 'onceq_plain';
  return parsed.toString();
}

/**
 * Counts the connections of the role {@link asPlainRole} made every 50 ms while `run`
 * runs and returns the most seen.
 */
async function peakConnections(adminUrl: string, run: () => Promise<void>): Promise<number> {
  const sampler = new SQL(adminUrl, { max: 1 });
  let peak = 0;
  let sampling = true;
  const sampled = (async () => {
    while (sampling) {
      const [{ n }] = await sampler.unsafe(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE usename = 'onceq_plain'`,
      );
      peak = Math.max(peak, n);
      await Bun.sleep(50);
    }
  })();
  try {
    await run();
  } finally {
    sampling = false;
    await sampled;
    await sampler.close();
  }
  return peak;
}

/**
 * `n` default workers on `events` events (about 3 % that v1 rejects), as an operator
 * scales out, at PostgreSQL's default `max_connections = 100`, as a role without
 * superuser rights: half the events are stored before the workers start together; once
 * they are idle again (one connection each) a producer enqueues the other half. Every
 * valid event is done exactly once, none dead, every worker exits 0 and never says it
 * lost its store. Returns the peak of the server's connections and the leases lost.
 */
async function scaleOut(
  adminUrl: string,
  n: number,
  events: number,
): Promise<{ peak: number; lost: number }> {
  const database = await freshDatabase(adminUrl);
  const url = await asPlainRole(adminUrl, database);
  const sandbox = cliSandbox();
  const workers: WorkerProcess[] = [];
  const admin = new SQL(database.url, { max: 1 });
  try {
    expect((await sandbox.run(['id-policy', 'set', 'general', '--db', url])).code).toBe(0);
    const half = Math.floor(events / 2);
    const file = writeEvents(sandbox.cwd, events);
    const lines = (await Bun.file(file).text()).split('\n');
    const first = join(sandbox.cwd, 'first.jsonl');
    const second = join(sandbox.cwd, 'second.jsonl');
    writeFileSync(first, `${lines.slice(0, half).join('\n')}\n`);
    writeFileSync(second, lines.slice(half).join('\n'));
    const peak = await peakConnections(adminUrl, async () => {
      expect((await sandbox.run(['enqueue', '--split', first, '--db', url])).code).toBe(0);
      for (let i = 0; i < n; i++) workers.push(startWorker(['--db', url], sandbox.cwd));
      for (const worker of workers) await worker.waitForLog(/worker started/, 300_000);
      const firstFacts = await settle(admin, half);
      expect(firstFacts.otherDead).toEqual([]);
      await until(() => onceqConnections(admin, database.name), n, `${n} idle workers`);
      const enqueued = await sandbox.run(['enqueue', '--split', second, '--db', url]);
      expect(enqueued.stderr).toBe('');
      expect(enqueued.code).toBe(0);
      const facts = await settle(admin, events);
      expect(facts.otherDead).toEqual([]);
      expect(facts.done).toBe(events - Math.floor(events / 33));
      expect(facts.effects).toBe(facts.done);
    });
    expect(await stopAll(workers)).toEqual(workers.map(() => 0));
    // Connections never failed a worker. (On a machine with far fewer cores than workers
    // a starved worker can still lose a lease to the clock: counted, not failed on.)
    for (const worker of workers) expect(worker.stderr()).not.toMatch(CONNECTION_TROUBLE);
    const lost = workers.reduce((n, w) => n + (w.stderr().match(/lease_lost/g) ?? []).length, 0);
    return { peak, lost };
  } finally {
    await stopAll(workers);
    await admin.close();
    await database.drop();
    sandbox.cleanup();
  }
}

describe.skipIf(SKIP)('default workers at max_connections = 100', () => {
  let url: string | undefined;
  beforeAll(async () => {
    const started = await clusterCommand('start', 100, 40);
    if (started.code !== 0) throw new Error(`could not start the cluster:\n${started.stderr}`);
    url = started.stdout.trim();
  }, CLUSTER_TIMEOUT_MS);
  afterAll(async () => {
    await clusterCommand('stop', 100, 40);
  }, CLUSTER_TIMEOUT_MS);

  // The smallest and the largest of the shape (16, 32, 48 and 64 workers), 64 being the
  // closest to the budget; `bun run bench --only scale` measures 1 to 64 workers.
  for (const [n, events] of [16, 64].map((n) => [n, 20_000] as const)) {
    test(`${n} default workers started together on ${events} events: exact, no valid event dead, the producer fits`, async () => {
      const { peak, lost } = await scaleOut(url as string, n, events);
      console.log(
        `${n} workers, ${events} events: at most ${peak} connections of 97, ${lost} leases lost`,
      );
      // Never all of them: room was left for producers and operators throughout.
      expect(peak).toBeLessThan(97);
    }, 1_200_000);
  }
});
