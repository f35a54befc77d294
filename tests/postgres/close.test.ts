// Closing a PostgreSQL store closes every connection it opened: whether its open
// migrated a new schema or found one already up to date, used it or not.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { enqueue, openStore, type Store, status } from '@onceq/core';
import { SQL } from 'bun';
import { onPostgres } from '../support/backends.ts';
import { type ScratchDatabase, scratchDatabase } from '../support/pg-database.ts';

let database: ScratchDatabase;

/** Server connections to the scratch database, other than the one counting them. */
async function connections(): Promise<number> {
  const admin = new SQL(process.env.DATABASE_URL as string);
  try {
    const [row] = await admin.unsafe(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
      [new URL(database.url).pathname.slice(1)],
    );
    return (row as { n: number }).n;
  } finally {
    await admin.close();
  }
}

onPostgres('closing a store', () => {
  beforeAll(async () => {
    database = scratchDatabase('onceq_close');
    await database.create();
  });
  afterAll(async () => {
    await database.drop();
  });

  test('closing a store leaves no connection behind: a new schema, then the same schema up to date, used or not', async () => {
    const uses = [
      async () => {},
      async (store: Store) => {
        await enqueue(store, '{"event_id":"E0001","payload":{}}\n');
      },
      async (store: Store) => {
        await status(store);
      },
    ];
    // The first open migrates a new schema; every later one finds it up to date.
    for (const [i, use] of [...uses, ...uses].entries()) {
      const store = await openStore(database.url);
      await use(store);
      await store.close();
      expect([i, await connections()]).toEqual([i, 0]);
    }
  });
});
