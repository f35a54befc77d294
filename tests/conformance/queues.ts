// Named queues on each backend (docs/worker.md, "Queues"): a claim takes only from its
// queue and recovers only its queue's leases, ordering keys are scoped to a queue, and an
// event id stays unique in the whole store.
import { describe, expect, test } from 'bun:test';
import { BatchRejectedError, type EventInput, enqueue, fail, show, work } from '@onceq/core';
import { blockedKeys, claimMany, findCounterDrift } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { BackendFactory } from '../support/factories.ts';
import { freshStore, rejection, snapshot } from './harness.ts';

function events(first: number, n: number, key?: string): EventInput[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `E${String(first + i).padStart(4, '0')}`;
    const payload = { category: 'book', amount_cents: first + i };
    return key === undefined ? { eventId, payload } : { eventId, payload, key };
  });
}

export function queuesSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: queues`, () => {
    const env = freshStore(factory);

    test('a claim takes only from its queue; a message without one is in default', async () => {
      const { store } = env();
      await enqueue(store, events(1, 2));
      await enqueue(store, events(3, 2), { queue: 'payments' });
      expect(
        (await claimMany(store, { limit: 10, queue: 'payments' })).map((l) => l.eventId),
      ).toEqual(['E0003', 'E0004']);
      expect(
        (await claimMany(store, { limit: 10, queue: 'refunds' })).map((l) => l.eventId),
      ).toEqual([]);
      expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual([
        'E0001',
        'E0002',
      ]);
      expect((await show(store, 'E0003')).state).toBe('leased');
    });

    test("a claim recovers only its queue's expired leases", async () => {
      const { store, clock } = env();
      await enqueue(store, events(1, 1), { queue: 'payments' });
      await enqueue(store, events(2, 1));
      await claimMany(store, { limit: 1, queue: 'payments', leaseSeconds: 1 });
      clock.set(1005);
      expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual(['E0002']);
      expect((await show(store, 'E0001')).state).toBe('leased');
      expect(
        (await claimMany(store, { limit: 10, queue: 'payments' })).map((l) => l.eventId),
      ).toEqual(['E0001']);
    });

    test('ordering keys are scoped to a queue: the same key in two queues has a head in each', async () => {
      const { store } = env();
      await enqueue(store, events(1, 2, 'A'));
      await enqueue(store, events(3, 2, 'A'), { queue: 'payments' });
      const [paymentsHead] = await claimMany(store, { limit: 10, queue: 'payments' });
      expect(paymentsHead?.eventId).toBe('E0003');
      await fail(store, paymentsHead as never, { kind: 'permanent', code: 'broken' });
      // payments' key A is blocked; default's key A is not.
      expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual(['E0001']);
      expect(await blockedKeys(store)).toEqual({
        count: 1,
        keys: [
          {
            queue: 'payments',
            key: 'A',
            eventId: 'E0003',
            deadSince: 1000,
            waiting: 1,
            code: 'broken',
            detail: 'permanent failure reported by the worker',
          },
        ],
      });
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('an event id is unique in the store: the same id in another queue is a conflict naming its queue', async () => {
      const { store } = env();
      await enqueue(store, events(1, 1), { queue: 'payments' });
      const before = await snapshot(store);
      const error = await rejection(enqueue(store, events(1, 1)), BatchRejectedError);
      expect(error.message).toContain('event_id E0001 is already stored in queue "payments"');
      const keyed = await rejection(enqueue(store, events(1, 1, 'K')), BatchRejectedError);
      expect(keyed.message).toContain('already stored in queue "payments"');
      expect(await snapshot(store)).toEqual(before);
      expect(await enqueue(store, events(1, 1), { queue: 'payments' })).toEqual({
        accepted: 0,
        duplicates: 1,
      });
    });

    test('a bad queue name is refused before anything is written', async () => {
      const { store } = env();
      await expect(enqueue(store, events(1, 1), { queue: 'pay ments' })).rejects.toThrow(
        'enqueue: queue must be 1 to 64 letters, digits',
      );
      expect((await snapshot(store)).messages).toEqual([]);
    });

    test("a worker of several queues drains each of them, and no other queue's messages", async () => {
      const { store } = env();
      await enqueue(store, events(1, 2), { queue: 'payments' });
      await enqueue(store, events(3, 2), { queue: 'refunds' });
      await enqueue(store, events(5, 1), { queue: 'signups' });
      const summary = await work(store, handlers.v1, { queues: ['payments', 'refunds'] });
      expect(summary).toMatchObject({ claimed: 4, done: 4 });
      expect((await show(store, 'E0005')).state).toBe('ready');
    });
  });
}
