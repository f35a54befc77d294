import { describe, expect, test } from 'bun:test';
import { apply, dlq, enqueue, previewRedrive, redrive, show, status, work } from '@onceq/core';
import { failingOnce } from '@onceq/demo/failing-once.ts';
import { handlers } from '@onceq/handler';
import { type BackendFactory, DEMO_BATCH } from '../support/factories.ts';
import {
  effectsOf,
  enqueueDemo,
  expectExit,
  freshStore,
  mustClaim,
  startChild,
  storeArgs,
} from './harness.ts';

/** The demo's lease (docs/protocol.md §6). */
const LEASE = 2;

export function storySuite(name: string, factory: BackendFactory): void {
  describe(`${name}: the demo story (docs/protocol.md §6)`, () => {
    const env = freshStore(factory);

    test('the demo story on the store API: 10000 at the snapshot, 17000 final, 20000 after the toy redrive', async () => {
      const e = env();
      const { store, clock } = e;
      const lease = { leaseSeconds: LEASE };

      // 1000: enqueue, then one message each way.
      await enqueueDemo(store);
      const e1 = await mustClaim(store, lease);
      expect(await apply(store, e1, handlers.v1)).toMatchObject({
        eventId: 'E0001',
        outcome: 'done',
      });
      const e2 = await mustClaim(store, lease);
      expect(await apply(store, e2, failingOnce(handlers.v1, new Set(['E0002'])))).toMatchObject({
        eventId: 'E0002',
        outcome: 'retry',
        availableAt: 1001,
      });
      const crash = await startChild('child-crash.ts', [
        ...storeArgs(e, 1000),
        '--lease',
        String(LEASE),
        '--expect',
        'E0003',
      ]);
      expectExit(crash, 86);
      await e.afterCrash();
      const e4 = await mustClaim(store, lease);
      expect(await apply(store, e4, handlers.v1)).toMatchObject({
        eventId: 'E0004',
        outcome: 'dead',
        code: 'invalid_payload',
      });

      // Snapshot.
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 10000 },
      ]);
      const snap = await status(store);
      expect(snap.total).toBe(10000);
      expect(snap.messages).toEqual({ ready: 1, leased: 1, done: 1, dead: 1 });
      expect((await show(store, 'E0003')).state).toBe('leased');
      if (e.integrityCheck) expect(await e.integrityCheck()).toBe('ok');

      // 1001: E0002 retried. 1002: E0003's lease expires, a new generation finishes it.
      clock.set(1001);
      expect(await work(store, handlers.v1, lease)).toMatchObject({ claimed: 1, done: 1 });
      clock.set(1002);
      expect(await work(store, handlers.v1, lease)).toMatchObject({ claimed: 1, done: 1 });
      expect(await show(store, 'E0003')).toMatchObject({ state: 'done', generation: 2 });

      const final = await status(store);
      expect(final).toEqual({
        messages: { ready: 0, leased: 0, done: 3, dead: 1 },
        effects: 3,
        totals: { book: 15000, pen: 2000 },
        total: 17000,
      });

      // Again: five duplicates, same money.
      expect(await enqueue(store, DEMO_BATCH)).toEqual({ accepted: 0, duplicates: 5 });
      expect(await status(store)).toEqual(final);

      // Redrive: under v1 the toy is dead again; under v2 it is done.
      expect((await dlq(store)).map((m) => m.eventId)).toEqual(['E0004']);
      await redrive(store, ['E0004']);
      await work(store, handlers.v1, lease);
      expect((await status(store)).messages.dead).toBe(1);
      expect(await previewRedrive(store, 'all', handlers.v2)).toMatchObject([
        { eventId: 'E0004', accepted: true },
      ]);
      await redrive(store, 'all');
      await work(store, handlers.v2, lease);
      const redriven = await status(store);
      expect(redriven).toMatchObject({ total: 20000, effects: 4 });
      expect(redriven.messages).toEqual({ ready: 0, leased: 0, done: 4, dead: 0 });
      expect(await dlq(store)).toEqual([]);
    });
  });
}
