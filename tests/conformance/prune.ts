import { describe, expect, test } from 'bun:test';
import {
  BatchRejectedError,
  claim,
  dlq,
  enqueue,
  previewRedrive,
  redrive,
  show,
  status,
  work,
} from '@onceq/core';
import { countDlq, prune } from '@onceq/core/admin';
import { PrunedError, payloadSha256 } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { enqueueDemo, freshStore, rejection, snapshot } from './harness.ts';

const DAY = 86_400;

export function pruneSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: prune keeps dedup`, () => {
    const env = freshStore(factory);

    /**
     * At 1000: E0001–E0003 done (book 10000, pen 2000, book 5000), E0004 dead (toy under v1).
     * At 1000 + 31 days: E0005 ready, E0006 leased. Returns the store with the clock there.
     */
    async function finishedAndLive() {
      const { store, clock } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1);
      clock.advance(31 * DAY);
      await enqueue(store, batch(line('E0005', paid('bag', 700)), line('E0006', paid('pen', 600))));
      expect((await claim(store))?.eventId).toBe('E0005');
      return store;
    }

    test('prune --done-older-than removes the payloads of old done messages only, keeping state, effects and money', async () => {
      const store = await finishedAndLive();
      const before = await status(store);
      const stored = (await show(store, 'E0001')).payloadText as string;
      const result = await prune(store, { doneOlderThanSeconds: 30 * DAY });
      expect([result.done, result.dead, result.dryRun]).toEqual([3, 0, false]);
      expect(await status(store)).toEqual(before);
      const e1 = await show(store, 'E0001');
      expect([e1.state, e1.payloadText, e1.payloadSha256, e1.prunedAt]).toEqual([
        'done',
        null,
        payloadSha256(stored),
        1000 + 31 * DAY,
      ]);
      expect(e1.effect).toEqual({ category: 'book', amountCents: 10000 });
      // Never ready or leased (however old), and dead only when asked for.
      for (const id of ['E0004', 'E0005', 'E0006']) {
        expect((await show(store, id)).payloadText).not.toBeNull();
      }
      expect((await show(store, 'E0005')).state).toBe('leased');
      expect((await show(store, 'E0006')).state).toBe('ready');
    });

    test('--dry-run counts what would go and changes nothing', async () => {
      const store = await finishedAndLive();
      const before = await snapshot(store);
      const result = await prune(store, {
        doneOlderThanSeconds: 30 * DAY,
        deadOlderThanSeconds: 30 * DAY,
        dryRun: true,
      });
      expect([result.done, result.dead, result.dryRun]).toEqual([3, 1, true]);
      expect(await snapshot(store)).toEqual(before);
    });

    test('the age is strict: a message finished exactly at the cutoff stays', async () => {
      const { store, clock } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1); // finished at 1000
      clock.set(1000 + 30 * DAY);
      expect((await prune(store, { doneOlderThanSeconds: 30 * DAY })).done).toBe(0);
      clock.set(1001 + 30 * DAY);
      expect((await prune(store, { doneOlderThanSeconds: 30 * DAY })).done).toBe(3);
    });

    test('a repeat of a pruned event is still a duplicate, whatever its key order', async () => {
      const store = await finishedAndLive();
      await prune(store, { doneOlderThanSeconds: 30 * DAY });
      const money = await status(store);
      const reordered = '{ "category" : "book", "amount_cents" : 10000 }';
      expect(
        await enqueue(store, batch(line('E0001', reordered), line('E0002', paid('pen', 2000)))),
      ).toEqual({ accepted: 0, duplicates: 2 });
      await work(store, handlers.v1); // only E0006 is new money (E0005 is still leased)
      expect((await status(store)).total).toBe(money.total + 600);
      expect((await status(store)).effects).toBe(money.effects + 1);
    });

    test('a changed payload of a pruned event is a conflict found only through the tombstone: the whole batch is rejected, saying the original was pruned', async () => {
      const store = await finishedAndLive();
      await prune(store, { doneOlderThanSeconds: 30 * DAY });
      const before = await snapshot(store);
      // 10000 vs 10000.0: the only evidence left is the SHA-256 of the original.
      const error = await rejection(
        enqueue(
          store,
          batch(
            line('E0100', paid('bag', 1)),
            line('E0001', '{"category":"book","amount_cents":10000.0}'),
          ),
        ),
        BatchRejectedError,
      );
      expect(error.issues).toHaveLength(1);
      expect(error.issues[0]?.line).toBe(2);
      expect(error.issues[0]?.reason).toContain('E0001 conflicts with a pruned message');
      expect(error.issues[0]?.reason).toContain('the original was pruned');
      expect(await snapshot(store)).toEqual(before); // E0100 did not land either
    });

    test('prune --dead-older-than: the dead message leaves the DLQ, cannot be redriven, and still deduplicates', async () => {
      const store = await finishedAndLive();
      const result = await prune(store, { deadOlderThanSeconds: 30 * DAY });
      expect([result.done, result.dead]).toEqual([0, 1]);
      expect((await status(store)).messages.dead).toBe(1);
      expect(await dlq(store)).toEqual([]);
      expect(await dlq(store, { limit: 1 })).toEqual([]);
      expect(await countDlq(store)).toBe(0);
      const refused = await rejection(redrive(store, ['E0004']), PrunedError);
      expect([refused.code, refused.exitCode]).toEqual(['pruned', 4]);
      expect(await redrive(store, 'all')).toEqual([]);
      expect((await show(store, 'E0004')).state).toBe('dead');
      const preview = await previewRedrive(store, ['E0004'], handlers.v2);
      expect(preview[0]?.code).toBe('pruned');
      expect(await enqueue(store, batch(line('E0004', paid('toy', 3000))))).toEqual({
        accepted: 0,
        duplicates: 1,
      });
    });

    test('small chunks prune everything, and a second run finds nothing left', async () => {
      const store = await finishedAndLive();
      const chunks: number[] = [];
      const result = await prune(store, {
        doneOlderThanSeconds: 30 * DAY,
        chunkSize: 2,
        onChunk: ({ pruned }) => chunks.push(pruned),
      });
      expect(result.done).toBe(3);
      expect(chunks).toEqual([2, 3]);
      expect((await prune(store, { doneOlderThanSeconds: 30 * DAY })).done).toBe(0);
    });
  });
}
