// The worker's Prometheus metrics read from a real store on each backend: the gauge of
// ordering keys held by a dead head follows the store through a death, a second one,
// a skip and a redrive; the messages by queue and state follow each queue.
import { describe, expect, test } from 'bun:test';
import { type EventInput, enqueue, fail, redrive, type Store, skip } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { WorkerMetrics } from '@onceq/core/metrics';
import { forEachBackend } from '../support/backends.ts';
import { testClock } from '../support/factories.ts';

function keyed(key: string, first: number, n: number): EventInput[] {
  return Array.from({ length: n }, (_, i) => ({
    eventId: `E${String(first + i).padStart(4, '0')}`,
    payload: { category: 'book', amount_cents: first + i },
    key,
  }));
}

/** The value of one unlabelled sample of the exposition. */
async function sample(metrics: WorkerMetrics, name: string): Promise<number | undefined> {
  const line = (await metrics.render()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Claims every key's head; `kill(id)` then fails that one for good. */
async function heads(store: Store): Promise<(eventId: string) => Promise<void>> {
  const leases = await claimMany(store, { limit: 10 });
  return async (eventId) => {
    const lease = leases.find((l) => l.eventId === eventId);
    if (lease === undefined) throw new Error(`${eventId} was not claimed`);
    await fail(store, lease, { kind: 'permanent', code: 'broken' });
  };
}

forEachBackend('worker metrics', (factory) => {
  describe(`${factory.name}: worker metrics`, () => {
    test('onceq_blocked_keys counts the keys held by a dead head, and drops at a skip and a redrive', async () => {
      const opened = await factory.open(testClock());
      try {
        const { store } = opened;
        const metrics = new WorkerMetrics(store);
        await enqueue(store, [...keyed('A', 1, 3), ...keyed('B', 4, 2), ...keyed('C', 6, 1)]);
        expect(await sample(metrics, 'onceq_blocked_keys')).toBe(0);
        const killHead = await heads(store);
        await killHead('E0001');
        expect(await sample(metrics, 'onceq_blocked_keys')).toBe(1);
        await killHead('E0004');
        expect(await sample(metrics, 'onceq_blocked_keys')).toBe(2);
        // A dead message is one per blocked key, never one per message waiting behind it.
        expect(await sample(metrics, 'onceq_dlq_messages')).toBe(2);
        await skip(store, ['E0004']);
        expect(await sample(metrics, 'onceq_blocked_keys')).toBe(1);
        await redrive(store, ['E0001']);
        expect(await sample(metrics, 'onceq_blocked_keys')).toBe(0);
      } finally {
        await opened.cleanup();
      }
    });

    test("onceq_queue_messages counts by queue and state, and onceq_messages stays the store's", async () => {
      const opened = await factory.open(testClock());
      try {
        const { store } = opened;
        const metrics = new WorkerMetrics(store);
        await enqueue(
          store,
          keyed('A', 1, 2).map(({ eventId, payload }) => ({ eventId, payload })),
        );
        await enqueue(store, keyed('A', 3, 3), { queue: 'payments' });
        await claimMany(store, { limit: 10 });
        const [head] = await claimMany(store, { limit: 10, queue: 'payments' });
        await fail(store, head as never, { kind: 'permanent', code: 'broken' });
        const text = await metrics.render();
        const lines = (name: string) =>
          text.split('\n').filter((l) => l.startsWith(`${name}{`) && !l.endsWith(' 0'));
        expect(lines('onceq_queue_messages')).toEqual([
          'onceq_queue_messages{queue="default",state="leased"} 2',
          'onceq_queue_messages{queue="payments",state="dead"} 1',
          'onceq_queue_messages{queue="payments",state="waiting"} 2',
        ]);
        expect(lines('onceq_messages')).toEqual([
          'onceq_messages{state="leased"} 2',
          'onceq_messages{state="dead"} 1',
          'onceq_messages{state="waiting"} 2',
        ]);
      } finally {
        await opened.cleanup();
      }
    });
  });
});
