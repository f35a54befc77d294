/**
 * A PostgreSQL connection that dies while onceq holds it checked out (server restart,
 * `pg_terminate_backend`) must end as one {@link StoreUnavailableError} sentence, never
 * as an uncaught `'error'` event that kills the process with a stack (node-postgres
 * emits one on a checked-out client that has no listener). The storms of
 * storm-postgres.test.ts show the same with real CLI processes; this is the small,
 * deterministic case.
 */
import { expect, test } from 'bun:test';
import { SQL } from 'bun';
import { openStore, StoreUnavailableError } from '../packages/core/src/index.ts';
import { describePostgres } from './support/backends.ts';
import { T0, testClock } from './support/factories.ts';

const DATABASE_URL = process.env.DATABASE_URL;
describePostgres('PostgreSQL connection loss', () => {
  test('a checked-out connection terminated between two queries: StoreUnavailableError, nothing uncaught', async () => {
    if (!DATABASE_URL) throw new Error('DATABASE_URL is not set');
    const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const store = await openStore(DATABASE_URL, { schema, clock: testClock(T0) });
    const admin = new SQL(DATABASE_URL);
    try {
      const error = await store.db.connection().execute(async (conn) => {
        const [row] = await conn
          .selectNoFrom((eb) => eb.fn<number>('pg_backend_pid', []).as('pid'))
          .execute();
        const pid = row?.pid;
        // Terminated while checked out and idle: the driver emits 'error' on the client.
        await admin.unsafe('SELECT pg_terminate_backend($1)', [pid]);
        for (let i = 0; i < 200; i++) {
          const [alive] = await admin.unsafe(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1',
            [pid],
          );
          if (alive.n === 0) break;
          await Bun.sleep(25);
        }
        // Let the socket's close reach the client before the next query.
        await Bun.sleep(100);
        return conn
          .selectFrom('messages')
          .select('event_id')
          .execute()
          .then(
            () => undefined,
            (e: unknown) => e,
          );
      });
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^lost the connection to PostgreSQL at 127\.0\.0\.1:\d+\/\w+: terminating connection due to administrator command$/,
      );
      // The store still works: the broken client was dropped from the pool.
      expect(await store.db.selectFrom('messages').select('event_id').execute()).toEqual([]);
    } finally {
      await store.close();
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  });
});
