// Ordering keys (docs/ordering.md), every rule of the semantics table, on each backend.
import { describe, expect, test } from 'bun:test';
import {
  apply,
  BatchRejectedError,
  type EventInput,
  enqueue,
  fail,
  type Handler,
  NotDeadError,
  redrive,
  type Store,
  show,
  skip,
  status,
  work,
} from '@onceq/core';
import { blockedKeys } from '@onceq/core/admin';
import { claimMany, complete, effectResult, findCounterDrift } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { BackendFactory } from '../support/factories.ts';
import { freshStore, mustClaim, rejection, snapshot } from './harness.ts';

/** `n` events E0001… of `key`, each a valid book payment of its own amount. */
function keyed(key: string | undefined, first: number, n: number): EventInput[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `E${String(first + i).padStart(4, '0')}`;
    const payload = { category: 'book', amount_cents: first + i };
    return key === undefined ? { eventId, payload } : { eventId, payload, key };
  });
}

const PERMANENT = { kind: 'permanent', code: 'broken' } as const;
const TEMPORARY = { kind: 'temporary', code: 'dependency_down' } as const;

/** Claims up to 100 and returns the ids, in claim order. */
async function claimIds(store: Store): Promise<string[]> {
  return (await claimMany(store, { limit: 100 })).map((l) => l.eventId);
}

/** Claims and ACKs until nothing is claimable; the ids in the order they were done. */
async function drain(store: Store): Promise<string[]> {
  const order: string[] = [];
  for (;;) {
    const leases = await claimMany(store, { limit: 100 });
    if (leases.length === 0) return order;
    for (const lease of leases) {
      await apply(store, lease, handlers.v1);
      order.push(lease.eventId);
    }
  }
}

export function orderingSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: ordering keys`, () => {
    const env = freshStore(factory);

    test("a key's messages are handed out one at a time, in enqueue order, across batches", async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 3));
      await enqueue(store, keyed('A', 4, 2));
      expect((await status(store)).messages).toEqual({
        ready: 1,
        leased: 0,
        done: 0,
        dead: 0,
        waiting: 4,
      });
      expect(await drain(store)).toEqual(['E0001', 'E0002', 'E0003', 'E0004', 'E0005']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test("work() drains every key to its end: a record's release of a key's next message is claimed before the drain ends", async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 3));
      expect((await work(store, handlers.v1)).done).toBe(3);
      await enqueue(store, [...keyed('B', 4, 3), ...keyed('C', 7, 2)]);
      expect((await work(store, handlers.v1, { batch: 1 })).done).toBe(5);
      expect((await status(store)).messages).toEqual({
        ready: 0,
        leased: 0,
        done: 8,
        dead: 0,
      });
    });

    test("the write that finishes a key's head hands its next message to its own claim when that claim has room", async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 3));
      const head = await mustClaim(store);
      const effect = { category: 'book', amountCents: 1 };
      const { outcomes, claimed } = await complete(
        store,
        [{ lease: head, result: effectResult(effect) }],
        {
          claimNext: {
            limit: 5,
            leaseSeconds: 30,
            maxAttempts: 3,
            queue: 'default',
            onDead: 'block',
          },
        },
      );
      expect(outcomes.map((o) => o.outcome)).toEqual(['done']);
      // Leased as any claim leases: its first attempt, a new generation, the claim's lease.
      expect(claimed?.map((l) => [l.eventId, l.attempt, l.generation])).toEqual([['E0002', 1, 1]]);
      expect((await show(store, 'E0002')).state).toBe('leased');
      expect((await show(store, 'E0003')).state).toBe('waiting');
      expect((await status(store)).messages).toEqual({
        ready: 0,
        leased: 1,
        done: 1,
        dead: 0,
        waiting: 1,
      });
      expect(await findCounterDrift(store)).toEqual([]);
      // Still one leased per key: nothing more of A until E0002 is done.
      expect(await claimIds(store)).toEqual([]);
    });

    test('at most one message per key is leased; other keys and unkeyed messages go in parallel', async () => {
      const { store } = env();
      await enqueue(store, [...keyed('A', 1, 3), ...keyed('B', 4, 3), ...keyed(undefined, 7, 2)]);
      expect(await claimIds(store)).toEqual(['E0001', 'E0004', 'E0007', 'E0008']);
      expect(await claimIds(store)).toEqual([]);
    });

    test("a message enqueued while its key's head is leased waits, and is ready once the head is done", async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 1));
      const head = await mustClaim(store);
      await enqueue(store, keyed('A', 2, 1));
      expect((await show(store, 'E0002')).state).toBe('waiting');
      await apply(store, head, handlers.v1);
      expect((await show(store, 'E0002')).state).toBe('ready');
      // A key with nothing unfinished: the next message is its head at once.
      await apply(store, await mustClaim(store), handlers.v1);
      await enqueue(store, keyed('A', 3, 1));
      expect((await show(store, 'E0003')).state).toBe('ready');
    });

    test('a message waiting for a retry holds its key back; other keys go on meanwhile', async () => {
      const { store, clock } = env();
      await enqueue(store, [...keyed('A', 1, 2), ...keyed('B', 3, 1)]);
      const [a1] = await claimMany(store, { limit: 1 });
      await fail(store, a1 as never, TEMPORARY);
      expect(await claimIds(store)).toEqual(['E0003']);
      clock.set(1001);
      expect(await claimIds(store)).toEqual(['E0001']);
    });

    test('an expired lease is reclaimed first, before anything later of its key', async () => {
      const { store, clock } = env();
      await enqueue(store, keyed('A', 1, 2));
      const first = await mustClaim(store, { leaseSeconds: 5 });
      clock.set(1005);
      const again = await claimMany(store, { limit: 10 });
      expect(again.map((l) => [l.eventId, l.generation])).toEqual([
        ['E0001', first.generation + 1],
      ]);
    });

    test('a dead head blocks its key, listed with what waits behind it; redrive resumes the key in order', async () => {
      const { store } = env();
      await enqueue(store, [...keyed('A', 1, 3), ...keyed('B', 4, 1)]);
      await fail(store, await mustClaim(store), PERMANENT);
      expect(await claimIds(store)).toEqual(['E0004']);
      expect(await claimIds(store)).toEqual([]);
      expect(await blockedKeys(store)).toEqual({
        count: 1,
        keys: [
          {
            queue: 'default',
            key: 'A',
            eventId: 'E0001',
            deadSince: 1000,
            waiting: 2,
            code: PERMANENT.code,
            detail: 'permanent failure reported by the worker',
          },
        ],
      });
      await redrive(store, ['E0001']);
      expect((await blockedKeys(store)).count).toBe(0);
      expect(await drain(store)).toEqual(['E0001', 'E0002', 'E0003']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('an expired lease on the last attempt is dead and blocks its key too', async () => {
      const { store, clock } = env();
      await enqueue(store, keyed('A', 1, 2));
      for (let t = 1000; t < 1003; t++) {
        clock.set(t);
        const leases = await claimMany(store, { limit: 10, leaseSeconds: 1 });
        expect(leases.map((l) => l.eventId)).toEqual(['E0001']);
      }
      clock.set(1003);
      // Recovery sends the head dead on its third expired claim: nothing of A is handed out.
      expect(await claimIds(store)).toEqual([]);
      expect((await show(store, 'E0001')).state).toBe('dead');
      expect((await show(store, 'E0002')).state).toBe('waiting');
    });

    test('skip puts a dead head aside as skipped, never done, and releases its key', async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 2));
      await fail(store, await mustClaim(store), PERMANENT);
      expect(await skip(store, ['E0001'])).toEqual(['E0001']);
      expect(await show(store, 'E0001')).toMatchObject({ state: 'skipped', effect: null });
      expect(await drain(store)).toEqual(['E0002']);
      expect((await status(store)).messages).toMatchObject({ done: 1, skipped: 1, dead: 0 });
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('skip refuses anything not dead and changes nothing', async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 2));
      await fail(store, await mustClaim(store), PERMANENT);
      const before = await snapshot(store);
      const error = await rejection(skip(store, ['E0001', 'E0002']), NotDeadError);
      expect([error.exitCode, error.eventIds]).toEqual([4, ['E0002']]);
      expect(await snapshot(store)).toEqual(before);
    });

    test('a blocked key never starves other keys, however much waits behind it', async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 200));
      await fail(store, await mustClaim(store), PERMANENT);
      await enqueue(store, [...keyed('B', 201, 2), ...keyed(undefined, 203, 1)]);
      expect(await drain(store)).toEqual(['E0201', 'E0203', 'E0202']);
      expect((await status(store)).messages).toMatchObject({ waiting: 199, dead: 1 });
    });

    test('a retried or leased head of one key never holds up another key', async () => {
      const { store } = env();
      await enqueue(store, [...keyed('A', 1, 2), ...keyed('B', 3, 2)]);
      const leases = await claimMany(store, { limit: 10 });
      expect(leases.map((l) => l.eventId)).toEqual(['E0001', 'E0003']);
      // A's head stays leased (a slow handler); B goes on to its end.
      await apply(store, leases[1] as never, handlers.v1);
      expect(await claimIds(store)).toEqual(['E0004']);
    });

    test('the same event id with another key, or without one, is a conflict; the same key is a duplicate', async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 1));
      const before = await snapshot(store);
      const other = await rejection(enqueue(store, keyed('B', 1, 1)), BatchRejectedError);
      expect(other.message).toContain('ordering key "A"');
      await rejection(enqueue(store, keyed(undefined, 1, 1)), BatchRejectedError);
      expect(await snapshot(store)).toEqual(before);
      expect(await enqueue(store, keyed('A', 1, 1))).toEqual({ accepted: 0, duplicates: 1 });
    });

    test('enqueues racing with claims and ACKs on other connections: every key handled in order, one at a time, none left waiting', async () => {
      const { store } = env();
      const KEYS = 5;
      const BATCHES = 12;
      const next = new Map<string, number>();
      const violations: string[] = [];
      const inFlight = new Set<string>();
      let handled = 0;
      // The handler sees the key's messages strictly one after another, in enqueue order.
      const handler: Handler = async (payload, context) => {
        const key = String(payload.k);
        const i = Number(payload.i);
        if (inFlight.has(key)) violations.push(`${key}#${i} while another of ${key} ran`);
        if ((next.get(key) ?? 0) !== i) violations.push(`${key}#${i} out of order`);
        inFlight.add(key);
        next.set(key, i + 1);
        // Let other handlers run meanwhile: one of the same key would find it in flight.
        await new Promise((resolve) => setImmediate(resolve));
        inFlight.delete(key);
        handled++;
        return handlers.v1(payload, context);
      };
      let producing = true;
      const produce = async () => {
        for (let b = 0; b < BATCHES; b++) {
          const events = Array.from({ length: KEYS * 2 }, (_, j) => {
            const k = `K${j % KEYS}`;
            const i = b * 2 + Math.floor(j / KEYS);
            const n = b * KEYS * 2 + j + 1;
            return {
              eventId: `E${String(n).padStart(4, '0')}`,
              payload: { category: 'book', amount_cents: n, k, i },
            };
          });
          await enqueue(store, events, { keyField: 'k' });
        }
        producing = false;
      };
      const consume = async () => {
        for (;;) {
          const leases = await claimMany(store, { limit: 3 });
          if (leases.length === 0 && !producing) return;
          await Promise.all(leases.map((lease) => apply(store, lease, handler)));
        }
      };
      await Promise.all([produce(), consume(), consume(), consume()]);
      await drain(store);
      expect(violations).toEqual([]);
      expect(handled).toBe(KEYS * 2 * BATCHES);
      expect((await status(store)).messages).toEqual({
        ready: 0,
        leased: 0,
        done: KEYS * 2 * BATCHES,
        dead: 0,
      });
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('delayed events are claimable only from their time; a delayed head holds its key', async () => {
      const { store, clock } = env();
      await enqueue(store, keyed(undefined, 1, 1), { delaySeconds: 600 });
      await enqueue(store, keyed('A', 2, 2), { availableAt: 1300 });
      expect((await show(store, 'E0001')).availableAt).toBe(1600);
      expect(await claimIds(store)).toEqual([]);
      clock.set(1300);
      const [head] = await claimMany(store, { limit: 10 });
      expect(head?.eventId).toBe('E0002');
      await apply(store, head as never, handlers.v1);
      clock.set(1600);
      expect(await claimIds(store)).toEqual(['E0003', 'E0001']);
      await expect(enqueue(store, keyed(undefined, 9, 1), { delaySeconds: -1 })).rejects.toThrow(
        RangeError,
      );
    });

    test('keyField takes the key from the payload; a line without it rejects the batch naming it', async () => {
      const { store } = env();
      const lines = [
        { event_id: 'E0001', payload: { category: 'book', amount_cents: 1, customer: { id: 7 } } },
        { event_id: 'E0002', payload: { category: 'book', amount_cents: 2, customer: { id: 7 } } },
        { event_id: 'E0003', payload: { category: 'book', amount_cents: 3 } },
      ].map((l) => JSON.stringify(l));
      const error = await rejection(
        enqueue(store, lines.join('\n'), { keyField: 'customer.id' }),
        BatchRejectedError,
      );
      expect(error.message).toContain('line 3: the payload has no customer.id');
      expect(
        await enqueue(store, lines.join('\n'), { keyField: 'customer.id', keyFieldOptional: true }),
      ).toEqual({ accepted: 3, duplicates: 0 });
      expect(await claimIds(store)).toEqual(['E0001', 'E0003']);
      expect((await show(store, 'E0002')).state).toBe('waiting');
    });
  });
}
