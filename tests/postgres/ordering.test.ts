/**
 * PostgreSQL: an enqueue deciding that a message waits behind its key's head, and the
 * ACK of that head on another connection, never interleave (docs/ordering.md): the ACK's
 * release of the key's next message waits for the enqueue's transaction, then sees its
 * message. Without the per-key lock the ACK would commit first, find nothing waiting,
 * and leave the enqueued message waiting forever behind a head already done.
 */
import { expect, test } from 'bun:test';
import { apply, enqueue, type Lease, type Store, show, status } from '@onceq/core';
import {
  type CompleteOptions,
  claimMany,
  complete,
  effectResult,
  findCounterDrift,
} from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import pg from 'pg';
import { describePostgres } from '../support/backends.ts';
import { postgresFactory, testClock } from '../support/factories.ts';

const book = (n: number) => ({ category: 'book', amount_cents: n });

describePostgres('postgres: ordering keys across connections', () => {
  test('an ACK racing an open enqueue of its key waits for it, then releases the enqueued message', async () => {
    const opened = await postgresFactory.open(testClock());
    const pool = new pg.Pool({ connectionString: opened.target, max: 2 });
    try {
      const { store } = opened;
      await enqueue(store, [{ eventId: 'E0001', payload: book(1), key: 'A' }]);
      const [head] = await claimMany(store, { limit: 1 });
      if (head === undefined) throw new Error('the head was not claimable');
      const caller = await pool.connect();
      try {
        await caller.query('BEGIN');
        await enqueue(store, [{ eventId: 'E0002', payload: book(2), key: 'A' }], {
          transaction: caller,
        });
        // The ACK on the store's own connection, while the enqueue is not committed.
        const acked = apply(store, head, handlers.v1);
        // Bounded wait for the event: the ACK waiting on the key's lock, or finishing.
        let finished = false;
        void acked.then(() => {
          finished = true;
        });
        for (let i = 0; i < 500 && !finished; i++) {
          const { rows } = await pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          if (Number(rows[0]?.n) > 0) break;
          await Bun.sleep(10);
        }
        expect(finished).toBe(false);
        await caller.query('COMMIT');
        expect((await acked).outcome).toBe('done');
      } finally {
        caller.release();
      }
      expect((await show(store, 'E0002')).state).toBe('ready');
    } finally {
      await pool.end();
      await opened.cleanup();
    }
  }, 60_000);

  test('a batch ACK of two keys never deadlocks with an enqueue that holds one key and then takes the other: it takes the locks in key order', async () => {
    const opened = await postgresFactory.open(testClock());
    const pool = new pg.Pool({ connectionString: opened.target, max: 2 });
    try {
      const { store } = opened;
      // Ids in the opposite order of their keys: the ACK meets key B first.
      await enqueue(store, [
        { eventId: 'E0001', payload: book(1), key: 'B' },
        { eventId: 'E0002', payload: book(2), key: 'A' },
      ]);
      const heads = await claimMany(store, { limit: 2 });
      expect(heads.map((l) => l.eventId)).toEqual(['E0001', 'E0002']);
      const caller = await pool.connect();
      try {
        // Were the ACK to hold key B while it waits on A, this connection would find the
        // deadlock first and fail its enqueue, instead of PostgreSQL rolling back the ACK
        // and onceq running it again unseen.
        await caller.query("SET deadlock_timeout = '10ms'");
        await caller.query('BEGIN');
        await enqueue(store, [{ eventId: 'E0003', payload: book(3), key: 'A' }], {
          transaction: caller,
        });
        const effect = { category: 'book', amountCents: 1 };
        const acked = complete(
          store,
          heads.map((lease) => ({ lease, result: effectResult(effect) })),
        );
        let finished = false;
        void acked.then(() => {
          finished = true;
        });
        // Bounded wait for the event: the ACK waiting on key A's lock.
        for (let i = 0; i < 500 && !finished; i++) {
          const { rows } = await pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          if (Number(rows[0]?.n) > 0) break;
          await Bun.sleep(10);
        }
        expect(finished).toBe(false);
        // Key B is free: the ACK waiting on A holds no lock of a later key.
        await enqueue(store, [{ eventId: 'E0004', payload: book(4), key: 'B' }], {
          transaction: caller,
        });
        await caller.query('COMMIT');
        const { outcomes } = await acked;
        expect(outcomes.map((o) => o.outcome)).toEqual(['done', 'done']);
      } finally {
        caller.release();
      }
      expect((await show(store, 'E0003')).state).toBe('ready');
      expect((await show(store, 'E0004')).state).toBe('ready');
    } finally {
      await pool.end();
      await opened.cleanup();
    }
  }, 60_000);
});

/**
 * The result template's claim runs on its statement's snapshot, before the release of
 * the keys it finished: the release leases the messages it frees to that claim only
 * while the claim has room (it then took every message it could see), in claim order,
 * those of its queue that are due; everything else goes `ready` for a later claim.
 */
describePostgres("postgres: the result template's claim and the messages its release frees", () => {
  const claimNext = (limit: number, queue = 'default'): CompleteOptions => ({
    claimNext: { limit, leaseSeconds: 30, maxAttempts: 3, queue, onDead: 'block' },
  });
  const ack = (store: Store, leases: readonly Lease[], options: CompleteOptions) =>
    complete(
      store,
      leases.map((lease) => ({
        lease,
        result: effectResult({ category: 'book', amountCents: 1 }),
      })),
      options,
    );
  const withStore = async (body: (store: Store) => Promise<void>) => {
    const opened = await postgresFactory.open(testClock());
    try {
      await body(opened.store);
      expect(await findCounterDrift(opened.store)).toEqual([]);
    } finally {
      await opened.cleanup();
    }
  };

  test('a claim without room leaves the next message ready: it took an earlier ready one', () =>
    withStore(async (store) => {
      await enqueue(store, [
        { eventId: 'E0001', payload: book(1), key: 'A' },
        { eventId: 'E0002', payload: book(2), key: 'A' },
      ]);
      const heads = await claimMany(store, { limit: 1 });
      await enqueue(store, [{ eventId: 'E0003', payload: book(3) }]);
      const { claimed } = await ack(store, heads, claimNext(1));
      expect(claimed?.map((l) => l.eventId)).toEqual(['E0003']);
      expect((await show(store, 'E0002')).state).toBe('ready');
    }));

  test('with room for one of two released messages, the first in claim order is leased', () =>
    withStore(async (store) => {
      await enqueue(store, [
        { eventId: 'E0001', payload: book(1), key: 'A' },
        { eventId: 'E0002', payload: book(2), key: 'B' },
        { eventId: 'E0004', payload: book(4), key: 'B' },
        { eventId: 'E0003', payload: book(3), key: 'A' },
      ]);
      const heads = await claimMany(store, { limit: 2 });
      expect(heads.map((l) => l.eventId)).toEqual(['E0001', 'E0002']);
      const { claimed } = await ack(store, heads, claimNext(1));
      expect(claimed?.map((l) => l.eventId)).toEqual(['E0003']);
      expect((await show(store, 'E0004')).state).toBe('ready');
      expect((await status(store)).messages).toMatchObject({ ready: 1, leased: 1, done: 2 });
    }));

  test("a message of another queue than the claim's, or not yet due, is made ready, not leased", () =>
    withStore(async (store) => {
      await enqueue(
        store,
        [
          { eventId: 'E0001', payload: book(1), key: 'A' },
          { eventId: 'E0002', payload: book(2), key: 'A' },
        ],
        { queue: 'payments' },
      );
      await enqueue(store, [{ eventId: 'E0003', payload: book(3), key: 'B' }]);
      const heads = [
        ...(await claimMany(store, { limit: 1, queue: 'payments' })),
        ...(await claimMany(store, { limit: 1 })),
      ];
      expect(heads.map((l) => l.eventId)).toEqual(['E0001', 'E0003']);
      await enqueue(store, [{ eventId: 'E0004', payload: book(4), key: 'B' }], {
        delaySeconds: 60,
      });
      const { claimed } = await ack(store, heads, claimNext(5));
      expect(claimed).toEqual([]);
      expect((await show(store, 'E0002')).state).toBe('ready');
      expect((await show(store, 'E0004')).state).toBe('ready');
    }));
});
