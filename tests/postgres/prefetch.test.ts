/**
 * `work` on PostgreSQL claims the next batch while it settles the current one (the
 * pipelined completer, worker/completer.ts): at batch 1 the first two messages by
 * claims, every later one by the record of the message two before it, in the same
 * statement as that record's fenced ACK. What
 * must hold: a claim made by a record is an ordinary claim (claim order, an attempt
 * spent), nothing is claimed past `max`, a record does not wait for the previous one,
 * and a lease the loop never gets to record (here: the settle fails) stays leased until
 * its lease runs out, after which the next claim recovers it and it is done exactly once.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts (`bun run test` starts a
 * throwaway cluster and sets `DATABASE_URL`; required under CI).
 */
import { expect, test } from 'bun:test';
import { enqueue, type Handler, type Store, StoreUnavailableError, work } from '@onceq/core';
import { effectResult } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { describePostgres } from '../support/backends.ts';
import {
  nEvents,
  type OpenedStore,
  postgresFactory,
  T0,
  type testClock,
  withFreshStore,
} from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';

const CLAIM = 'claim-with-recovery';
/** The result template: a message's fenced ACK and the claim of a later one, one statement. */
const RECORD = 'complete';

function withStore(
  body: (opened: OpenedStore, clock: ReturnType<typeof testClock>) => Promise<void>,
): Promise<void> {
  return withFreshStore(postgresFactory, body);
}

/**
 * `store` with every statement it runs seen by `onStatement` (its operation, in call
 * order) before it runs, whether it commits by itself (`store.read`: a claim or a money
 * ACK on PostgreSQL) or in a transaction (`store.transact`: a failure); `onStatement`
 * may delay or throw.
 */
function observed(
  store: Store,
  onStatement: (operation: string, run: () => Promise<unknown>) => Promise<unknown>,
): Store {
  type Executor = Parameters<Parameters<Store['read']>[0]>[0];
  const seen = (x: Executor): Executor => ({
    ...x,
    query: ((statement, parameters) =>
      // The counters' fold follows about one claim or ACK in 32, at random: not observed.
      typeof statement === 'string' || statement.name.split('/')[1] === 'fold-counts'
        ? x.query(statement, parameters)
        : onStatement(statement.name.split('/')[1] ?? '', () =>
            x.query(statement, parameters),
          )) as typeof x.query,
  });
  return {
    ...store,
    read: (fn) => store.read((x) => fn(seen(x))),
    transact: (fn, within) => store.transact((x) => fn(seen(x)), within),
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

/** Every message done at its first attempt, with exactly its one effect. */
async function expectEachDoneOnce(store: Store, ids: readonly string[]): Promise<void> {
  expect(await rows(store)).toEqual(ids.map((id) => `${id} done a1 g1`));
  expect(await effects(store)).toEqual([...ids]);
}

describePostgres('postgres: work claims the next batch while it settles one', () => {
  test('after the first two claims each message is recorded by one statement that also claims, and no claim of nothing ends the run', async () => {
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
      // claim E0001, claim E0002 ahead; then each message's record is one statement that
      // also claims: E0003 comes with a record (E0001's, or E0002's when a new pooled
      // connection made E0001's start later, then one more claim ahead goes out for the
      // message after E0003), and no claim of nothing ends the run. Claim then ACK per
      // message would be 3 claims, 3 ACKs and a last claim that finds nothing.
      expect(calls.slice(0, 2)).toEqual([CLAIM, CLAIM]);
      expect(calls.filter((call) => call === RECORD)).toHaveLength(3);
      expect(calls.filter((call) => call === CLAIM).length).toBeLessThanOrEqual(3);
      expect(calls).toHaveLength(calls.filter((call) => call === CLAIM || call === RECORD).length);
      await expectEachDoneOnce(store, three.ids);
    });
  });

  for (const batch of [1, 3]) {
    test(`a record does not wait for the previous one: a slow first record holds back neither the next handler nor its record (batch ${batch})`, async () => {
      await withStore(async ({ store }) => {
        const six = nEvents(2 * batch);
        await enqueue(store, six.jsonl);
        let records = 0;
        let secondRecordSent = () => {};
        const secondRecord = new Promise<void>((resolve) => {
          secondRecordSent = resolve;
        });
        let first: 'sent' | 'waited' | undefined;
        // A record is any statement but a claim or a heartbeat, whatever the backend names it.
        const slowFirstRecord = observed(store, async (name, run) => {
          if (name === CLAIM || name === 'extend') return run();
          if (++records === 2) secondRecordSent();
          if (records === 1) {
            // Bounded: a loop that waits for this record before the next one never sends it.
            let timer: ReturnType<typeof setTimeout> | undefined;
            const bound = new Promise<'waited'>((resolve) => {
              timer = setTimeout(() => resolve('waited'), 10_000);
            });
            first = await Promise.race([secondRecord.then(() => 'sent' as const), bound]);
            clearTimeout(timer);
          }
          return run();
        });
        // Records overlap only on a pool with room for two: concurrency 2 sizes it so (a
        // worker at concurrency 1 holds one connection, and its records take turns).
        const summary = await work(slowFirstRecord, handlers.v1, { batch, concurrency: 2 });
        expect(first).toBe('sent');
        expect(summary).toMatchObject({ claimed: 2 * batch, done: 2 * batch, lost: 0 });
        await expectEachDoneOnce(store, six.ids);
      });
    });
  }

  test('a record whose lease ran out writes nothing, and the claim in its statement recovers that message like any claim (generation 2)', async () => {
    await withStore(async ({ store }, clock) => {
      await enqueue(store, nEvents(1).jsonl);
      const [row] = await store.driver.claim(store, {
        limit: 1,
        leaseSeconds: 30,
        maxAttempts: 3,
        queue: 'default',
        onDead: 'block',
      });
      if (row === undefined) throw new Error('nothing claimed');
      clock.set(T0 + 30);
      const report = await store.driver.complete(
        store,
        [
          {
            lease: { eventId: row.event_id, generation: Number(row.generation) },
            ...effectResult({ category: 'book', amountCents: 100 }),
            failed: () => {
              throw new Error('no write(tx) to fail');
            },
          },
        ],
        {
          claimNext: {
            limit: 1,
            leaseSeconds: 30,
            maxAttempts: 3,
            queue: 'default',
            onDead: 'block',
          },
        },
      );
      expect([...report.written.keys()]).toEqual([]);
      expect(report.claimed?.map((r) => `${r.event_id} g${r.generation} a${r.attempts}`)).toEqual([
        'E0001 g2 a2',
      ]);
      expect(await rows(store)).toEqual(['E0001 leased a2 g2']);
      expect(await effects(store)).toEqual([]);
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

  test('the batch claimed ahead that reaches max is still handled, not given back', async () => {
    await withStore(async ({ store }) => {
      await enqueue(store, nEvents(3).jsonl);
      let claims = 0;
      let second: Promise<unknown> | undefined;
      const watched = observed(store, (name, run) => {
        const result = run();
        if (name === CLAIM && ++claims === 2) second = result;
        return result;
      });
      // The first handler returns only once the claim ahead (the second, reaching max)
      // has arrived: the loop then holds a full `max` with one batch still unhandled.
      const waiting: Handler = async (payload, context) => {
        await second;
        // One turn of the event loop: the claim's result has reached the worker's hands.
        await new Promise((resolve) => setImmediate(resolve));
        return handlers.v1(payload, context);
      };
      const summary = await work(watched, waiting, { batch: 1, max: 2 });
      expect(summary).toMatchObject({ claimed: 2, done: 2 });
      expect(await rows(store)).toEqual([
        'E0001 done a1 g1',
        'E0002 done a1 g1',
        'E0003 ready a0 g0',
      ]);
    });
  });

  test('a settle that fails leaves the message claimed ahead leased with its attempt spent and claims nothing; after the lease the next claim recovers it and each message is done once', async () => {
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
        // Every settle: wait until the prefetched claim has committed, then fail without
        // writing as a lost connection does (a store that cannot be written: not a
        // refused write, which would be recorded as the message's failure).
        await prefetched;
        throw new StoreUnavailableError('connection lost before the ACK');
      });
      await expect(work(failing, handlers.v1, { batch: 1 })).rejects.toThrow(
        'connection lost before the ACK',
      );
      // E0002 was claimed ahead while E0001 was handled (handled too, its settle refused
      // as well); the failed settles claimed nothing: E0003 is still ready.
      expect(await rows(store)).toEqual([
        'E0001 leased a1 g1',
        'E0002 leased a1 g1',
        'E0003 ready a0 g0',
      ]);
      expect(await effects(store)).toEqual([]);

      // Before the leases run out only E0003 is claimable: the dead loop still owns the rest.
      clock.set(T0 + 29);
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 1, done: 1 });
      // After: lazy recovery hands them back, each is done once with its second attempt.
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
