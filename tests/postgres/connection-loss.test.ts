/**
 * A PostgreSQL connection that dies while onceq holds it checked out (server restart,
 * `pg_terminate_backend`) must end as one {@link StoreUnavailableError} sentence, never
 * as an uncaught `'error'` event that kills the process with a stack (node-postgres
 * emits one on a checked-out client that has no listener). The storms of
 * storm-postgres.test.ts show the same with real CLI processes; this is the small,
 * deterministic case.
 */
import { expect, test } from 'bun:test';
import { openStore, StoreUnavailableError } from '@onceq/core';
import { SQL } from 'bun';
import type PgTypes from 'pg';
// The root's `pg` is the store's own copy (one version, one installed folder): its
// clients are the ones watched here.
import pg from 'pg';
import { describePostgres } from '../support/backends.ts';
import { T0, testClock } from '../support/factories.ts';

/** A read of the messages table, on whatever connection the store gives it. */
const EVERY_MESSAGE = { filter: {}, order: 'id', limit: 100 } as const;

/** How long the server and the client get to notice the termination. */
const NOTICE_MS = 10_000;

/**
 * Resolves when the driver's client of server process `pid` emits `'error'`: the
 * termination has reached it while it sits checked out and idle.
 */
function clientErrorOf(pid: () => number | undefined): { seen: Promise<void>; stop(): void } {
  const emit = pg.Client.prototype.emit;
  let resolve = () => {};
  const seen = new Promise<void>((r) => {
    resolve = r;
  });
  pg.Client.prototype.emit = function (this: PgTypes.Client, event: string, ...args: unknown[]) {
    if (event === 'error' && (this as { processID?: number }).processID === pid()) resolve();
    return emit.call(this, event, ...args);
  } as typeof emit;
  return { seen, stop: () => (pg.Client.prototype.emit = emit) };
}

/** `promise`, or a rejection naming `what` once `ms` have passed without it. */
function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const DATABASE_URL = process.env.DATABASE_URL;
describePostgres('PostgreSQL connection loss', () => {
  test('a checked-out connection terminated between two queries: StoreUnavailableError, nothing uncaught', async () => {
    if (!DATABASE_URL) throw new Error('DATABASE_URL is not set');
    const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const store = await openStore(DATABASE_URL, { schema, clock: testClock(T0) });
    const admin = new SQL(DATABASE_URL);
    let pid: number | undefined;
    const clientError = clientErrorOf(() => pid);
    try {
      // store.read holds one of the store's pooled clients checked out until it returns.
      const error = await store
        .read(async (x) => {
          const { rows } = await x.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          pid = rows[0]?.pid;
          // Terminated while checked out and idle: the driver emits 'error' on the client.
          // With a timeout, pg_terminate_backend waits until the server process is gone.
          const [ended] = await admin.unsafe('SELECT pg_terminate_backend($1, $2) AS ok', [
            pid,
            NOTICE_MS,
          ]);
          expect(ended.ok).toBe(true);
          // The socket's close reaches the client before the next query.
          await deadline(clientError.seen, NOTICE_MS, "the terminated client's 'error' event");
          await store.driver.listPage(x, EVERY_MESSAGE);
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^lost the connection to PostgreSQL at 127\.0\.0\.1:\d+\/\w+: terminating connection due to administrator command$/,
      );
      // The store still works: the broken client was dropped from the pool.
      expect(await store.read((x) => store.driver.listPage(x, EVERY_MESSAGE))).toEqual([]);
    } finally {
      clientError.stop();
      await store.close();
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  });

  test('every pooled connection checked out past the pool wait: one sentence naming pool_max, not the driver words', async () => {
    if (!DATABASE_URL) throw new Error('DATABASE_URL is not set');
    const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const url = new URL(DATABASE_URL);
    url.searchParams.set('pool_max', '1');
    const store = await openStore(url.toString(), { schema, clock: testClock(T0) });
    let free = () => {};
    const freed = new Promise<void>((resolve) => {
      free = resolve;
    });
    try {
      // The one pooled connection stays checked out until the second read has given up.
      const holding = store.read(() => freed);
      const error = await store
        .read((x) => store.driver.listPage(x, EVERY_MESSAGE))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      free();
      await holding;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^no pooled connection to PostgreSQL at 127\.0\.0\.1:\d+\/\w+ came free within 10 s: all of this process's connections stayed busy \(raise \?pool_max= or lower --concurrency; see the connection budget in docs\/postgres\.md\)$/,
      );
      // Once the connection is back, the store works again.
      expect(await store.read((x) => store.driver.listPage(x, EVERY_MESSAGE))).toEqual([]);
    } finally {
      free();
      await store.close();
      const admin = new SQL(DATABASE_URL);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }, 60_000);
});
