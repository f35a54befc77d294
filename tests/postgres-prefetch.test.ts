/**
 * `work` at batch 1 on PostgreSQL claims the next message while it settles the current
 * one (worker.ts, `prefetchesClaims`). What must hold: the overlapped claim is an
 * ordinary claim (claim order, an attempt spent), nothing is claimed past `max`, the
 * claim ahead does not wait for the previous settle, and a lease the loop never gets to
 * record (here: the settle fails) stays leased until its lease runs out, after which
 * the next claim recovers it and it is done exactly once.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts (`bun run test` starts a
 * throwaway cluster and sets `DATABASE_URL`; required under CI).
 */
import { expect, test } from 'bun:test';
import { enqueue, type Handler, type Store, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { StoreUnavailableError } from '../packages/core/src/internal.ts';
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
      // claim E0001; then the claim of each next message goes out before the settle of the
      // current one (the claim after it may too: the claim ahead waits for no settle).
      const claimsAt = calls.flatMap((call, i) => (call === CLAIM ? [i] : []));
      const acksAt = calls.flatMap((call, i) => (call === 'ack-one-with-effect' ? [i] : []));
      expect(claimsAt).toHaveLength(4);
      expect(acksAt).toHaveLength(3);
      acksAt.forEach((ackAt, k) => {
        expect(claimsAt[k + 1] as number).toBeLessThan(ackAt);
      });
      expect(await rows(store)).toEqual([
        'E0001 done a1 g1',
        'E0002 done a1 g1',
        'E0003 done a1 g1',
      ]);
      expect(await effects(store)).toEqual(three.ids);
    });
  });

  test('the claim ahead does not wait for the previous settle: a slow first ACK holds back no claim', async () => {
    await withStore(async ({ store }) => {
      const three = nEvents(3);
      await enqueue(store, three.jsonl);
      let claims = 0;
      let acks = 0;
      let thirdClaimSent = () => {};
      const thirdClaim = new Promise<void>((resolve) => {
        thirdClaimSent = resolve;
      });
      const slowFirstAck = observed(store, async (name, run) => {
        if (name === CLAIM) {
          if (++claims === 3) thirdClaimSent();
          return run();
        }
        if (++acks === 1) {
          // Bounded: a loop that waits for this ACK before its next claim never sends it.
          let timer: ReturnType<typeof setTimeout> | undefined;
          const bound = new Promise<'waited'>((resolve) => {
            timer = setTimeout(() => resolve('waited'), 10_000);
          });
          const first = await Promise.race([thirdClaim.then(() => 'claimed' as const), bound]);
          clearTimeout(timer);
          if (first === 'waited') throw new Error('the third claim waited for the first ACK');
        }
        return run();
      });
      const summary = await work(slowFirstAck, handlers.v1, { batch: 1 });
      expect(summary).toMatchObject({ claimed: 3, done: 3, lost: 0 });
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

  test('a settle that fails leaves the messages claimed after it leased with their attempts spent; after their lease the next claim recovers them and each message is done once', async () => {
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
      // E0002 was claimed ahead while E0001's settle ran, and E0003 ahead of E0002's
      // (handled, its settle refused too) before the loop saw E0001's settle fail.
      expect(await rows(store)).toEqual([
        'E0001 leased a1 g1',
        'E0002 leased a1 g1',
        'E0003 leased a1 g1',
      ]);
      expect(await effects(store)).toEqual([]);

      // Before the leases run out nothing of them is claimable.
      clock.set(T0 + 29);
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 0 });
      // After: lazy recovery hands them back, each is done once with its second attempt.
      clock.set(T0 + 30);
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 3, done: 3 });
      expect(await rows(store)).toEqual([
        'E0001 done a2 g2',
        'E0002 done a2 g2',
        'E0003 done a2 g2',
      ]);
      expect(await effects(store)).toEqual(three.ids);
    });
  });
});
