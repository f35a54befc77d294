/**
 * What a batch does when part of it goes wrong: a handler's invalid effect fails only
 * that message, a lease that runs out in the middle of a batch costs only that message,
 * and a write the database refuses for one message fails only that message; the rest
 * of the batch commits (docs/protocol.md §5).
 */
import { describe, expect, test } from 'bun:test';
import { enqueue, type Handler, show, status, work } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, nEvents } from '../support/factories.ts';
import { effectsOf, freshStore, handleAll, mustClaim } from './harness.ts';

/** v1, except that the listed events get the effect given (which the table would refuse). */
function returning(bad: Record<string, unknown>): Handler {
  return (payload, message) =>
    message.eventId in bad
      ? (bad[message.eventId] as Awaited<ReturnType<Handler>>)
      : handlers.v1(payload, message);
}

export function applyFaultsSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: a batch with a bad part`, () => {
    const env = freshStore(factory);

    test('an effect the effects table would refuse fails that message permanently (invalid_effect, reason kept); the rest of the batch commits', async () => {
      const { store } = env();
      await enqueue(store, nEvents(8).jsonl);
      const bad = {
        E0002: { category: 'pen', amountCents: 0 },
        E0003: { category: '', amountCents: 300 },
        E0004: { category: 'book', amountCents: 1.5 },
        E0005: { category: 'bag', amountCents: 10_000_000 },
        E0006: { category: 'bag', amountCents: '600' },
        E0007: null,
      };
      const leases = await claimMany(store, { limit: 8 });
      const { outcomes, lost } = await handleAll(store, leases, returning(bad));
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'dead'],
        ['E0003', 'dead'],
        ['E0004', 'dead'],
        ['E0005', 'dead'],
        ['E0006', 'dead'],
        ['E0007', 'dead'],
        ['E0008', 'done'],
      ]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0001', 'E0008']);
      const e2 = await show(store, 'E0002');
      expect([e2.state, e2.lastErrorCode]).toEqual(['dead', 'invalid_effect']);
      expect(e2.lastErrorDetail).toContain('amountCents 0');
      expect((await show(store, 'E0003')).lastErrorDetail).toContain('category ""');
      expect((await show(store, 'E0004')).lastErrorDetail).toContain('amountCents 1.5');
      expect((await show(store, 'E0007')).lastErrorDetail).toContain('returned null');
    });

    test('work() does not throw for an invalid effect: it counts the message dead and goes on', async () => {
      const { store } = env();
      await enqueue(store, nEvents(5).jsonl);
      const summary = await work(store, returning({ E0003: { category: 'book', amountCents: 0 } }));
      expect(summary).toMatchObject({ claimed: 5, done: 4, dead: 1, lost: 0 });
      expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 4, dead: 1 });
    });

    test('a lease that runs out in the middle of a batch: that message is lost, the remainder is retried and committed', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(3).jsonl);
      const [short] = await claimMany(store, { limit: 1, leaseSeconds: 2 }); // E0001 until 1002
      const rest = await claimMany(store, { limit: 2 }); // E0002, E0003 until 1030
      if (short === undefined) throw new Error('nothing claimed');
      // The handlers ran at 1001; the completion's fence reads 1002: E0001's lease ran out
      // meanwhile, the other two hold.
      clock.set(1002);
      const { outcomes, lost } = await handleAll(store, [short, ...rest], handlers.v1);
      expect(lost.map((l) => [l.eventId, l.code])).toEqual([['E0001', 'lease_lost']]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0002', 'done'],
        ['E0003', 'done'],
      ]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0002', 'E0003']);
      // E0001: nothing of it was written; recovery gives it its next attempt.
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'leased',
        generation: 1,
        effect: null,
      });
      const retry = await mustClaim(store);
      expect([retry.eventId, retry.generation, retry.attempt]).toEqual(['E0001', 2, 2]);
    });
  });
}
