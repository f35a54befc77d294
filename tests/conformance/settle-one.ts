/**
 * `settleOne`: one message's result as one fenced write with no read in front (how
 * `work` records a claim of one message; on PostgreSQL one statement that commits by
 * itself). The stale leases here carry a forged, far `leaseUntil`, so the JavaScript
 * expiry check passes and the SQL `WHERE` is the only thing between them and the row:
 * each must write nothing, effect included, and come back as a lost lease saying why.
 */
import { describe, expect, test } from 'bun:test';
import { enqueue, LeaseLostError, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { extendMany, settleMany } from '../../packages/core/src/internal.ts';
import type { HandlerResult } from '../../packages/core/src/queue/handler-result.ts';
import { type ClaimedLease, settleOne } from '../../packages/core/src/queue/settle-one.ts';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { effectsOf, freshStore, mustClaim, snapshot, type TestEnv } from './harness.ts';

const BOOK_EFFECT = { category: 'book', amountCents: 100 };
const BOOK: HandlerResult = { effect: BOOK_EFFECT };
const TEMPORARY: HandlerResult = {
  failure: { kind: 'temporary', code: 'dependency_down', detail: 'try later' },
};

export function settleOneSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: one message, one fenced write (settleOne)`, () => {
    const env = freshStore(factory);

    /** E0001 claimed (generation 1, 2 s), recovered and re-claimed at 1002 (generation 2). */
    async function reclaimed(e: TestEnv): Promise<ClaimedLease> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(e.store, { leaseSeconds: 2 });
      e.clock.set(1002);
      expect((await mustClaim(e.store)).generation).toBe(2);
      return { ...old, leaseUntil: 9999 };
    }

    for (const [label, result] of [
      ['an effect', BOOK],
      ['a failure', TEMPORARY],
    ] as const) {
      test(`${label} under a stale generation writes nothing and is reported lost`, async () => {
        const e = env();
        const stale = await reclaimed(e);
        const before = await snapshot(e.store);
        const { outcomes, lost } = await settleOne(e.store, stale, result);
        expect(outcomes).toEqual([]);
        expect(lost).toHaveLength(1);
        expect(lost[0]).toBeInstanceOf(LeaseLostError);
        expect(lost[0]?.message).toContain('a newer claim owns it');
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });

      test(`${label} at exactly lease_until writes nothing (the SQL fence, not the JavaScript one)`, async () => {
        const e = env();
        await enqueue(e.store, batch(line('E0001', paid('book', 100))));
        const lease = await mustClaim(e.store); // until 1030
        e.clock.set(1030);
        const before = await snapshot(e.store);
        const { lost } = await settleOne(e.store, { ...lease, leaseUntil: 9999 }, result);
        expect(lost[0]?.message).toContain('the lease expired at 1030 (now 1030)');
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });
    }

    test('positive control: while the lease holds, the effect and the ACK are written together', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      const { outcomes, lost } = await settleOne(store, lease, BOOK);
      expect(lost).toEqual([]);
      expect(outcomes).toEqual([{ eventId: 'E0001', outcome: 'done', effect: BOOK_EFFECT }]);
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 100 },
      ]);
      const { messages } = await snapshot(store);
      expect(messages.map((m) => [m.event_id, m.state])).toEqual([['E0001', 'done']]);
    });

    test('positive control: a temporary failure on attempt 1 is a retry after 1 s; on attempt 3 it is dead', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const first = await mustClaim(store);
      expect((await settleOne(store, first, TEMPORARY)).outcomes).toEqual([
        {
          eventId: 'E0001',
          outcome: 'retry',
          code: 'dependency_down',
          detail: 'try later',
          availableAt: 1001,
        },
      ]);
      clock.set(1001);
      await settleOne(store, await mustClaim(store), TEMPORARY);
      clock.set(1003);
      const third = await mustClaim(store);
      expect(third.attempt).toBe(3);
      expect((await settleOne(store, third, TEMPORARY)).outcomes).toMatchObject([
        { eventId: 'E0001', outcome: 'dead', code: 'dependency_down' },
      ]);
    });

    test("the worker's settle of one success (settleMany, one write): a stale generation writes nothing, an extended lease still commits", async () => {
      const e = env();
      const stale = await reclaimed(e);
      const before = await snapshot(e.store);
      const refused = await settleMany(e.store, [{ lease: stale, result: BOOK }]);
      expect(refused.outcomes).toEqual([]);
      expect(refused.lost[0]?.message).toContain('a newer claim owns it');
      expect(await snapshot(e.store)).toEqual(before);
      expect(await effectsOf(e.store)).toEqual([]);
      // The current holder's lease ran to 1032 at its claim; extended to 1062 at 1031, it
      // settles at 1040 although the Lease object still says 1032.
      e.clock.set(1031);
      const [holder] = (await extendMany(e.store, [{ eventId: 'E0001', generation: 2 }], 31))
        .extended;
      expect(holder?.leaseUntil).toBe(1062);
      e.clock.set(1040);
      const settled = await settleMany(e.store, [
        { lease: { eventId: 'E0001', generation: 2, leaseUntil: 1032 } as never, result: BOOK },
      ]);
      expect(settled.lost).toEqual([]);
      expect(settled.outcomes).toMatchObject([{ eventId: 'E0001', outcome: 'done' }]);
      expect((await effectsOf(e.store)).map((x) => x.eventId)).toEqual(['E0001']);
    });

    test('work one message at a time (batch 1) counts, totals and refuses exactly like a batch', async () => {
      const { store } = env();
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 100)),
          line('E0002', paid('toy', 5)),
          line('E0003', paid('pen', 7)),
        ),
      );
      expect(await work(store, handlers.v1, { batch: 1 })).toEqual({
        claimed: 3,
        done: 2,
        retried: 0,
        dead: 1,
        lost: 0,
      });
      expect((await effectsOf(store)).map((x) => x.eventId)).toEqual(['E0001', 'E0003']);
    });
  });
}
