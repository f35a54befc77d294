/**
 * `work` at batch 1 on PostgreSQL claims the next message while it settles the current
 * one (worker.ts, `prefetchesClaims`). What must hold: the overlapped claim is an
 * ordinary claim (claim order, an attempt spent), nothing is claimed past `max`, and a
 * prefetched lease the loop never gets to (here: the settle fails) stays leased until
 * its lease runs out, after which the next claim recovers it and it is done exactly once.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts (`bun run test` starts a
 * throwaway cluster and sets `DATABASE_URL`; required under CI).
 */
import { expect, test } from 'bun:test';
import { enqueue, type Store, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { describePostgres } from './support/backends.ts';
import {
  nEvents,
  type OpenedStore,
  postgresFactory,
  T0,
  type testClock,
  withFreshStore,
} from './support/factories.ts';
import { rawDb } from './support/raw-db.ts';

const CLAIM = 'claim-with-recovery';

function withStore(
  body: (opened: OpenedStore, clock: ReturnType<typeof testClock>) => Promise<void>,
): Promise<void> {
  return withFreshStore(postgresFactory, body);
}

/**
 * `store` with every statement that commits by itself (`store.read`, a claim or a money
 * ACK on PostgreSQL) seen by `onStatement` (its operation, in call order) before it runs;
 * `onStatement` may delay or throw.
 */
function observed(
  store: Store,
  onStatement: (operation: string, run: () => Promise<unknown>) => Promise<unknown>,
): Store {
  return {
    ...store,
    read: (fn) =>
      store.read((x) =>
        fn({
          ...x,
          query: ((statement, parameters) =>
            typeof statement === 'string'
              ? x.query(statement, parameters)
              : onStatement(statement.name.split('/')[1] ?? '', () =>
                  x.query(statement, parameters),
                )) as typeof x.query,
        }),
      ),
  };
}

async function rows(store: Store): Promise<string[]> {
  const found = await rawDb(store, (db) =>
    db
      .selectFrom('messages')
      .select(['event_id', 'state', 'attempts', 'generation'])
      .orderBy('event_id')
      .execute(),
  );
  return found.map((r) => `${r.event_id} ${r.state} a${r.attempts} g${r.generation}`);
}

async function effects(store: Store): Promise<string[]> {
  const found = await rawDb(store, (db) =>
    db.selectFrom('effects').select('event_id').orderBy('event_id').execute(),
  );
  return found.map((e) => e.event_id);
}

describePostgres('postgres: work at batch 1 claims the next message while it settles one', () => {
  test('the next claim is issued before the settle of the current message, in claim order', async () => {
    await withStore(async ({ store }) => {
      const three = nEvents(3);
      await enqueue(store, three.jsonl);
      const calls: string[] = [];
      const summary = await work(
        observed(store, async (name, run) => {
          calls.push(name);
          return run();
        }),
        handlers.v1,
        { batch: 1 },
      );
      expect(summary).toMatchObject({ claimed: 3, done: 3, lost: 0 });
      // claim E0001; then each settle goes out right after the claim of the next one.
      expect(calls).toEqual([
        CLAIM,
        CLAIM,
        'ack-one-with-effect',
        CLAIM,
        'ack-one-with-effect',
        CLAIM,
        'ack-one-with-effect',
      ]);
      expect(await rows(store)).toEqual([
        'E0001 done a1 g1',
        'E0002 done a1 g1',
        'E0003 done a1 g1',
      ]);
      expect(await effects(store)).toEqual(three.ids);
    });
  });

  test('nothing is claimed past max: the last message of the limit prefetches nothing', async () => {
    await withStore(async ({ store }) => {
      await enqueue(store, nEvents(3).jsonl);
      const summary = await work(store, handlers.v1, { batch: 1, max: 2 });
      expect(summary).toMatchObject({ claimed: 2, done: 2 });
      expect(await rows(store)).toEqual([
        'E0001 done a1 g1',
        'E0002 done a1 g1',
        'E0003 ready a0 g0',
      ]);
    });
  });

  test('a settle that fails leaves the prefetched message leased with its attempt spent; after its lease the next claim recovers it and each message is done once', async () => {
    await withStore(async ({ store }, clock) => {
      const three = nEvents(3);
      await enqueue(store, three.jsonl);
      let claims = 0;
      let prefetched: Promise<unknown> | undefined;
      const failing = observed(store, async (name, run) => {
        if (name === CLAIM) {
          claims++;
          const result = run();
          if (claims === 2) prefetched = result;
          return result;
        }
        // The first settle: wait until the prefetched claim has committed, then fail
        // without writing (a lost connection, say).
        await prefetched;
        throw new Error('connection lost before the ACK');
      });
      await expect(work(failing, handlers.v1, { batch: 1 })).rejects.toThrow(
        'connection lost before the ACK',
      );
      expect(await rows(store)).toEqual([
        'E0001 leased a1 g1',
        'E0002 leased a1 g1', // prefetched: leased, its attempt spent, never handled
        'E0003 ready a0 g0',
      ]);
      expect(await effects(store)).toEqual([]);

      // Before the leases run out nothing of them is claimable; E0003 is.
      clock.set(T0 + 29);
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 1, done: 1 });
      // After: lazy recovery hands both back, each is done once with its second attempt.
      clock.set(T0 + 30);
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 2, done: 2 });
      expect(await rows(store)).toEqual([
        'E0001 done a2 g2',
        'E0002 done a2 g2',
        'E0003 done a1 g1',
      ]);
      expect(await effects(store)).toEqual(three.ids);
    });
  });
});
