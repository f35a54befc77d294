// Named queues on each backend (docs/worker.md, "Queues"): a claim takes only from its
// queue and recovers only its queue's leases, ordering keys are scoped to a queue, and an
// event id stays unique in the whole store.
import { describe, expect, test } from 'bun:test';
import {
  BatchRejectedError,
  dlq,
  type EventInput,
  enqueue,
  fail,
  previewRedrive,
  redrive,
  show,
  status,
  work,
} from '@onceq/core';
import { blockedKeys, countDlq, countsByQueue, PruneArgumentError, prune } from '@onceq/core/admin';
import { claimMany, findCounterDrift } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { BackendFactory } from '../support/factories.ts';
import { freshStore, rejection, snapshot } from './harness.ts';

function events(first: number, n: number, key?: string, category = 'book'): EventInput[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `E${String(first + i).padStart(4, '0')}`;
    const payload = { category, amount_cents: first + i };
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

    /** default: E0001 done, E0002 dead; payments: E0003 done, E0004-E0005 dead (toy under v1). */
    async function twoQueues(store: Parameters<typeof work>[0]): Promise<void> {
      await enqueue(store, [...events(1, 1), ...events(2, 1, undefined, 'toy')]);
      await enqueue(store, [...events(3, 1), ...events(4, 2, undefined, 'toy')], {
        queue: 'payments',
      });
      await work(store, handlers.v1, { queues: ['default', 'payments'] });
    }

    test("status of a queue counts its messages and its effects' money; the store's status every queue", async () => {
      const { store } = env();
      await twoQueues(store);
      expect(await status(store, { queue: 'payments' })).toEqual({
        messages: { ready: 0, leased: 0, done: 1, dead: 2 },
        effects: 1,
        totals: { book: 3 },
        total: 3,
      });
      expect(await status(store, { queue: 'refunds' })).toEqual({
        messages: { ready: 0, leased: 0, done: 0, dead: 0 },
        effects: 0,
        totals: {},
        total: 0,
      });
      expect(await status(store)).toMatchObject({
        messages: { ready: 0, leased: 0, done: 2, dead: 3 },
        total: 4,
      });
      expect(await countsByQueue(store)).toEqual({
        default: { ready: 0, leased: 0, done: 1, dead: 1 },
        payments: { ready: 0, leased: 0, done: 1, dead: 2 },
      });
    });

    test('the DLQ and the blocked keys of a queue hold only its dead messages', async () => {
      const { store } = env();
      await twoQueues(store);
      await enqueue(store, events(6, 2, 'K', 'toy'), { queue: 'payments' });
      await enqueue(store, events(8, 2, 'K', 'toy'));
      await work(store, handlers.v1, { queues: ['default', 'payments'] });
      const ids = (views: { eventId: string }[]) => views.map((v) => v.eventId);
      expect(ids(await dlq(store, { queue: 'payments' }))).toEqual(['E0004', 'E0005', 'E0006']);
      expect(ids(await dlq(store, { queue: 'payments', limit: 1 }))).toEqual(['E0004']);
      expect(await countDlq(store, { queue: 'payments' })).toBe(3);
      expect(ids(await dlq(store))).toEqual(['E0002', 'E0004', 'E0005', 'E0006', 'E0008']);
      const blocked = await blockedKeys(store, { queue: 'payments' });
      expect([blocked.count, blocked.keys.map((k) => [k.queue, k.eventId])]).toEqual([
        1,
        [['payments', 'E0006']],
      ]);
      expect((await blockedKeys(store)).count).toBe(2);
    });

    test("a redrive of a queue moves only that queue's dead messages; its preview judges only them", async () => {
      const { store } = env();
      await twoQueues(store);
      const preview = await previewRedrive(store, { queue: 'payments' }, handlers.v2);
      expect(preview.map((p) => [p.eventId, p.accepted])).toEqual([
        ['E0004', true],
        ['E0005', true],
      ]);
      expect(await redrive(store, { queue: 'payments' })).toEqual(['E0004', 'E0005']);
      expect((await show(store, 'E0002')).state).toBe('dead');
      expect((await show(store, 'E0004')).state).toBe('ready');
      expect(await redrive(store, { queue: 'payments' })).toEqual([]);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test("a prune of a queue touches only that queue's messages; the dedup window stays the store's", async () => {
      const { store, clock } = env();
      await twoQueues(store);
      clock.set(2000);
      const dry = await prune(store, {
        queue: 'payments',
        doneOlderThanSeconds: 10,
        deadOlderThanSeconds: 10,
        dryRun: true,
      });
      expect([dry.done, dry.dead]).toEqual([1, 2]);
      const result = await prune(store, {
        queue: 'payments',
        doneOlderThanSeconds: 10,
        deadOlderThanSeconds: 10,
        dutyCycle: 1,
      });
      expect([result.done, result.dead]).toEqual([1, 2]);
      expect((await show(store, 'E0003')).prunedAt).toBe(2000);
      expect((await show(store, 'E0001')).prunedAt).toBeNull();
      expect((await show(store, 'E0002')).prunedAt).toBeNull();
      const before = await snapshot(store);
      await rejection(
        prune(store, { queue: 'payments', forgetOlderThanSeconds: 10, force: true }),
        PruneArgumentError,
      );
      expect(await snapshot(store)).toEqual(before);
    });
  });
}
