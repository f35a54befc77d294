/**
 * What only PostgreSQL can show: real worker processes competing through
 * `FOR UPDATE SKIP LOCKED`, a claim held open while another client skips its row, a
 * worker killed after its claim committed, concurrent migrations of a fresh schema,
 * and passwords kept out of every message.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts (`bun run test` starts a
 * throwaway cluster and sets `DATABASE_URL`; required under CI).
 */
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import {
  claim,
  enqueue,
  type Lease,
  openStore,
  type Store,
  StoreUnavailableError,
  show,
  status,
  work,
} from '@onceq/core';
import { holdClaim } from '@onceq/core/internal';
import { redactUrl } from '@onceq/core/postgres';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';
import {
  DEMO_BATCH,
  nEvents,
  type OpenedStore,
  postgresFactory,
  T0,
  testClock,
  withFreshStore,
} from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';

const DATABASE_URL = process.env.DATABASE_URL;

const WORKER = join(import.meta.dir, '..', 'support', 'pg-worker.ts');

function pgUrl(): string {
  if (!DATABASE_URL) throw new Error('DATABASE_URL is not set');
  return DATABASE_URL;
}

/** Opens a fresh schema on a model clock at T0, runs `body`, drops the schema. */
function withFreshSchema(
  body: (opened: OpenedStore, clock: ReturnType<typeof testClock>) => Promise<void>,
): Promise<void> {
  pgUrl();
  return withFreshStore(postgresFactory, body);
}

/** A fresh schema name for tests that open stores themselves. */
function freshSchema(): string {
  return `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Drops `schema` on a connection of the test's own. */
async function dropSchema(schema: string): Promise<void> {
  const admin = new SQL(pgUrl());
  try {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.close();
  }
}

/** A child process speaking one JSON document per stdout line. */
class Child {
  readonly proc: Bun.Subprocess<'pipe', 'pipe', 'pipe'>;
  readonly #chunks: AsyncIterator<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';

  constructor(args: string[]) {
    this.proc = Bun.spawn(['bun', WORKER, ...args], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env },
    });
    this.#chunks = this.proc.stdout[Symbol.asyncIterator]();
  }

  /** The next stdout line as JSON; fails with the child's stderr if it exits first. */
  async next<T>(): Promise<T> {
    while (!this.#buffer.includes('\n')) {
      const { value, done } = await this.#chunks.next();
      if (done) {
        const stderr = await new Response(this.proc.stderr).text();
        throw new Error(`worker exited (${await this.proc.exited}) early: ${stderr.trim()}`);
      }
      this.#buffer += this.#decoder.decode(value, { stream: true });
    }
    const at = this.#buffer.indexOf('\n');
    const line = this.#buffer.slice(0, at);
    this.#buffer = this.#buffer.slice(at + 1);
    return JSON.parse(line) as T;
  }

  go(): void {
    this.proc.stdin.write('go\n');
    this.proc.stdin.flush();
  }
}

interface Summary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  lost: number;
}

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** `DATABASE_URL` with `password` in its user info (trust auth ignores it). */
function withPassword(url: string, password: string, database?: string): string {
  const parsed = new URL(url);
  if (parsed.username === '') parsed.username = 'onceq';
  parsed.password = password;
  if (database !== undefined) parsed.pathname = `/${database}`;
  return parsed.toString();
}

describePostgres('PostgreSQL only', () => {
  test('two worker processes share 200 events: every effect exactly once, both did work', async () => {
    await withFreshSchema(async ({ store, schema }) => {
      const n = 200;
      const { jsonl, total } = nEvents(n);
      expect(await enqueue(store, jsonl)).toEqual({ accepted: n, duplicates: 0 });

      const workers = [0, 1].map(
        () => new Child([pgUrl(), schema as string, 'work-together', String(T0)]),
      );
      // Both are connected and migrated before either starts: a fair race.
      for (const w of workers) expect(await w.next<{ ready: boolean }>()).toEqual({ ready: true });
      for (const w of workers) w.go();
      // Both hold a claimed batch before either handles it: both do work, however fast.
      for (const w of workers) {
        expect(await w.next<{ handling: boolean }>()).toEqual({ handling: true });
      }
      for (const w of workers) w.go();
      const summaries = await Promise.all(workers.map((w) => w.next<Summary>()));
      expect(await Promise.all(workers.map((w) => w.proc.exited))).toEqual([0, 0]);

      for (const s of summaries) {
        expect(s.done).toBeGreaterThan(0);
        expect([s.retried, s.dead, s.lost]).toEqual([0, 0, 0]);
      }
      expect(summaries.reduce((sum, s) => sum + s.done, 0)).toBe(n);

      const report = await status(store);
      expect(report.messages).toEqual({ ready: 0, leased: 0, done: n, dead: 0 });
      expect([report.effects, report.total]).toEqual([n, total]);
      const effects = await rawDb(store, (db) =>
        db.selectFrom('effects').select('event_id').execute(),
      );
      expect(new Set(effects.map((e) => e.event_id)).size).toBe(n);
      // Claimed once each: no message was ever handed to both workers.
      const generations = await rawDb(store, (db) =>
        db.selectFrom('messages').select('generation').distinct().execute(),
      );
      expect(generations.map((g) => Number(g.generation))).toEqual([1]);
    });
  });

  test('a held claim keeps its row locked: a second claim skips it and gets the next event at once', async () => {
    await withFreshSchema(async ({ store: holder, target, schema }) => {
      await enqueue(holder, DEMO_BATCH);
      const other = await openStore(target, { schema, clock: holder.clock });
      try {
        let letGo!: () => void;
        const released = new Promise<void>((resolve) => {
          letGo = resolve;
        });
        let held!: (lease: Lease | null) => void;
        const claimed = new Promise<Lease | null>((resolve) => {
          held = resolve;
        });
        let holding = true;
        const holdDone = holdClaim(holder, {}, async (lease) => {
          held(lease);
          await released;
        }).finally(() => {
          holding = false;
        });

        expect((await claimed)?.eventId).toBe('E0001');
        // Without SKIP LOCKED the claim waits for the holder, which lets go only below:
        // any bound tells the two apart, so a generous one.
        const timeout = Bun.sleep(60_000).then(() => 'blocked' as const);
        const second = await Promise.race([claim(other), timeout]);
        expect(second).not.toBe('blocked');
        expect((second as Lease).eventId).toBe('E0002');
        expect(holding).toBe(true);
        // Uncommitted: other connections still see E0001 ready.
        expect((await show(other, 'E0001')).state).toBe('ready');

        letGo();
        const first = await holdDone;
        expect(first).toMatchObject({ eventId: 'E0001', generation: 1, attempt: 1 });
        const row = await show(other, 'E0001');
        expect([row.state, row.generation, row.leaseUntil]).toEqual(['leased', 1, T0 + 30]);
        expect((await claim(other))?.eventId).toBe('E0003');
      } finally {
        await other.close();
      }
    });
  });

  test('a held claim whose release throws is rolled back: the row is ready again', async () => {
    await withFreshSchema(async ({ store }) => {
      await enqueue(store, DEMO_BATCH);
      const attempt = holdClaim(store, {}, async () => {
        throw new Error('operator pressed Ctrl-C');
      });
      await expect(attempt).rejects.toThrow('operator pressed Ctrl-C');
      const row = await show(store, 'E0001');
      expect([row.state, row.attempts, row.generation]).toEqual(['ready', 0, 0]);
    });
  });

  test('a worker killed after its claim committed: the lease expires, another worker completes it once', async () => {
    await withFreshSchema(async ({ store, schema }, clock) => {
      await enqueue(store, DEMO_BATCH);
      const victim = new Child([pgUrl(), schema as string, 'claim-and-hang', String(T0)]);
      const lease = await victim.next<Lease>();
      expect(lease).toMatchObject({ eventId: 'E0001', generation: 1, leaseUntil: T0 + 30 });
      victim.proc.kill('SIGKILL');
      expect(await victim.proc.exited).toBe(137);
      expect(victim.proc.signalCode).toBe('SIGKILL');

      const orphan = await show(store, 'E0001');
      expect([orphan.state, orphan.generation, orphan.effect]).toEqual(['leased', 1, null]);

      // One second before expiry nothing recovers it: the others are claimed instead.
      clock.set(lease.leaseUntil - 1);
      expect((await claim(store))?.eventId).toBe('E0002');
      expect((await show(store, 'E0001')).state).toBe('leased');

      // At lease_until another worker process recovers it as generation 2 and finishes.
      const rescuer = new Child([pgUrl(), schema as string, 'work', String(lease.leaseUntil)]);
      await rescuer.next();
      rescuer.go();
      const summary = await rescuer.next<Summary>();
      expect(await rescuer.proc.exited).toBe(0);
      expect(summary.done).toBeGreaterThanOrEqual(1);

      const done = await show(store, 'E0001');
      expect([done.state, done.generation, done.attempts]).toEqual(['done', 2, 2]);
      expect(done.effect).toEqual({ category: 'book', amountCents: 10000 });
      const effects = await rawDb(store, (db) =>
        db.selectFrom('effects').select('event_id').where('event_id', '=', 'E0001').execute(),
      );
      expect(effects).toHaveLength(1);
    });
  });

  test('two processes and two more connections open one fresh schema at once: all migrate it', async () => {
    const url = pgUrl();
    const schema = freshSchema();
    // Nothing exists yet: every opener races on CREATE SCHEMA and the migration tables.
    const children = [0, 1].map(() => new Child([url, schema, 'work', String(T0)]));
    const stores = await Promise.all(
      [0, 1].map(() => openStore(url, { schema, clock: testClock(T0) })),
    );
    for (const child of children) {
      expect(await child.next<{ ready: boolean }>()).toEqual({ ready: true });
      child.go();
      expect((await child.next<Summary>()).claimed).toBe(0);
      expect(await child.proc.exited).toBe(0);
    }
    try {
      const [first] = stores as [Store];
      expect(await enqueue(first, DEMO_BATCH)).toEqual({ accepted: 4, duplicates: 1 });
      // Everything, the migration bookkeeping included, lives in that schema only.
      const admin = new SQL(url);
      try {
        const rows: { table_name: string }[] = await admin`
          SELECT table_name FROM information_schema.tables
          WHERE table_schema = ${schema} ORDER BY table_name`;
        expect(rows.map((r) => r.table_name)).toEqual([
          'completions',
          'deliveries',
          'delivery_attempts',
          'disabled_endpoints',
          'effects',
          'message_keys',
          'messages',
          'onceq_counts',
          'onceq_meta',
          'onceq_migrations',
          'onceq_migrations_lock',
        ]);
      } finally {
        await admin.close();
      }
    } finally {
      await dropSchema(schema);
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  test('two clients enqueue the same batch at once: one accepts it, the other counts duplicates', async () => {
    await withFreshSchema(async ({ store, target, schema }) => {
      const other = await openStore(target, { schema, clock: store.clock });
      try {
        const { jsonl } = nEvents(50);
        // The loser waits on the winner's uncommitted keys, hits the unique key, and
        // re-runs its transaction: it then reads the committed rows as duplicates.
        const results = await Promise.all([enqueue(store, jsonl), enqueue(other, jsonl)]);
        const accepted = results.map((r) => r.accepted).sort((a, b) => a - b);
        expect(accepted).toEqual([0, 50]);
        expect(results.map((r) => r.accepted + r.duplicates)).toEqual([50, 50]);
        expect((await status(store)).messages.ready).toBe(50);
      } finally {
        await other.close();
      }
    });
  });

  test('the demo story totals are JS numbers on PostgreSQL (no bigint or numeric strings)', async () => {
    await withFreshSchema(async ({ store }) => {
      await enqueue(store, DEMO_BATCH);
      await work(store, handlers.v1);
      const report = await status(store);
      expect(report).toEqual({
        messages: { ready: 0, leased: 0, done: 3, dead: 1 },
        effects: 3,
        totals: { book: 15000, pen: 2000 },
        total: 17000,
      });
      // The store's own reading of a row: its pool's number parsing is what is checked.
      const [row] = await store.read((x) =>
        store.driver.listPage(x, { filter: {}, order: 'id', limit: 1 }),
      );
      if (row === undefined) throw new Error('no message stored');
      expect(typeof row.available_at).toBe('number');
      expect(typeof row.updated_at).toBe('number');
    });
  });

  test('a connection failure is one sentence with host, port and database, never the password', async () => {
    pgUrl();
    const password = 's3cret-PW-do-not-print';
    const port = closedPort();
    const url = `postgres://onceq:${password}@127.0.0.1:${port}/onceq_test`;
    const error = await openStore(url).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    const e = error as StoreUnavailableError;
    expect(e.exitCode).toBe(1);
    expect(e.message).toBe(
      `cannot reach PostgreSQL at 127.0.0.1:${port}/onceq_test: connection refused`,
    );
    for (const text of [e.message, String(e), e.stack ?? '']) expect(text).not.toContain(password);
  });

  test('a server-side refusal (unknown database) names the target but not the password', async () => {
    const password = 'pw-for-a-missing-db';
    const url = withPassword(pgUrl(), password, 'onceq_no_such_database');
    const error = await openStore(url).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain('/onceq_no_such_database: database "onceq_no_such_database"');
    expect(message).not.toContain(password);
    expect(message).not.toContain('\n');
  });

  test('pool_max=1 opens and migrates a fresh schema on its one connection, then enqueues and works', async () => {
    const url = new URL(pgUrl());
    url.searchParams.set('pool_max', '1');
    const schema = freshSchema();
    // The migrations must not wait for a second connection the pool may not open.
    const store = await openStore(url.toString(), { schema, clock: testClock(T0) });
    try {
      const { jsonl } = nEvents(20);
      expect(await enqueue(store, jsonl)).toEqual({ accepted: 20, duplicates: 0 });
      expect((await work(store, handlers.v1, { batch: 5 })).done).toBe(20);
      expect((await status(store)).effects).toBe(20);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  }, 60_000);

  test('the store location is the URL with its password replaced by ***', async () => {
    const password = 'hunter2-location-secret';
    const url = withPassword(pgUrl(), password);
    const schema = freshSchema();
    const store = await openStore(url, { schema });
    try {
      expect(store.location).not.toContain(password);
      expect(store.location).toContain(':***@');
      expect(store.kind).toBe('postgres');
      expect(store.driver.capabilities).toEqual({
        skipLocked: true,
        maxParameters: 65_535,
        backup: false,
        serverClock: true,
      });
    } finally {
      await dropSchema(schema);
      await store.close();
    }
    const [pass, at] = ['p%40ss', 'p@ss']; // run-time values: no URL with a password in the repo
    expect(redactUrl(`postgresql://u:${pass}@db:5433/x?sslmode=require&password=zz`)).toBe(
      'postgresql://u:***@db:5433/x?sslmode=require&password=***',
    );
    expect(redactUrl(`postgres://u:${at}@db/x`)).toBe('postgres://u:***@db/x');
    expect(redactUrl('postgres://onceq@db/x')).toBe('postgres://onceq@db/x');
  });
});
