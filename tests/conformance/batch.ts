import { describe, expect, test } from 'bun:test';
import { enqueue, show, status, work } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, nEvents } from '../support/factories.ts';
import { effectsOf, freshStore, handleAll, snapshot } from './harness.ts';

export function batchSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: batch mode`, () => {
    const env = freshStore(factory);

    test('claimMany takes up to limit messages in order, each with its own generation', async () => {
      const { store } = env();
      await enqueue(store, nEvents(5).jsonl);
      const leases = await claimMany(store, { limit: 3 });
      expect(leases.map((l) => [l.eventId, l.generation, l.attempt])).toEqual([
        ['E0001', 1, 1],
        ['E0002', 1, 1],
        ['E0003', 1, 1],
      ]);
      expect((await status(store)).messages).toMatchObject({ ready: 2, leased: 3 });
      expect(await claimMany(store, { limit: 10 })).toHaveLength(2);
      expect(await claimMany(store, { limit: 10 })).toEqual([]);
    });

    test('a batch completion skips a lease lost in the batch and commits the others', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(3).jsonl);
      const [stale] = await claimMany(store, { limit: 1, leaseSeconds: 2 }); // E0001 until 1002
      const rest = await claimMany(store, { limit: 2, leaseSeconds: 30 }); // E0002, E0003
      clock.set(1002);
      const [reclaimed] = await claimMany(store, { limit: 1 }); // expiry + reclaim: E0001 gen 2
      expect([reclaimed?.eventId, reclaimed?.generation]).toEqual(['E0001', 2]);
      if (stale === undefined || reclaimed === undefined) throw new Error('claims failed');

      const result = await handleAll(store, [stale, ...rest], handlers.v1);
      expect(result.lost.map((e) => [e.eventId, e.generation, e.code])).toEqual([
        ['E0001', 1, 'lease_lost'],
      ]);
      expect(result.outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0002', 'done'],
        ['E0003', 'done'],
      ]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0002', 'E0003']);
      expect(await show(store, 'E0001')).toMatchObject({ state: 'leased', generation: 2 });
    });

    test('a batch completion with every lease lost writes nothing', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(2).jsonl);
      const leases = await claimMany(store, { limit: 2, leaseSeconds: 2 });
      clock.set(1002);
      const before = await snapshot(store);
      const result = await handleAll(store, leases, handlers.v1);
      expect(result.outcomes).toEqual([]);
      expect(result.lost).toHaveLength(2);
      expect(await snapshot(store)).toEqual(before);
    });

    test('work with batch 10 over 50 events writes 50 effects, each once', async () => {
      const { store } = env();
      const events = nEvents(50);
      expect(await enqueue(store, events.jsonl)).toEqual({ accepted: 50, duplicates: 0 });
      const summary = await work(store, handlers.v1, { batch: 10 });
      expect(summary).toEqual({ claimed: 50, done: 50, retried: 0, dead: 0, lost: 0 });
      const effects = await effectsOf(store);
      expect(effects.map((e) => e.eventId)).toEqual(events.ids);
      const report = await status(store);
      expect(report).toMatchObject({ effects: 50, total: events.total });
      expect(report.messages).toEqual({ ready: 0, leased: 0, done: 50, dead: 0 });
      expect(await work(store, handlers.v1, { batch: 10 })).toMatchObject({ claimed: 0 });
    });

    test('work at batch 1 (each record claims the next message) stops at max and leaves nothing leased', async () => {
      const { store } = env();
      await enqueue(store, nEvents(5).jsonl);
      const summary = await work(store, handlers.v1, { batch: 1, max: 3 });
      expect(summary).toEqual({ claimed: 3, done: 3, retried: 0, dead: 0, lost: 0 });
      expect((await status(store)).messages).toEqual({ ready: 2, leased: 0, done: 3, dead: 0 });
      // Never claimed, so no attempt spent.
      expect(await show(store, 'E0004')).toMatchObject({
        state: 'ready',
        attempts: 0,
        generation: 0,
      });
      expect(await work(store, handlers.v1, { batch: 1 })).toMatchObject({ claimed: 2, done: 2 });
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(nEvents(5).ids);
    });
  });
}
