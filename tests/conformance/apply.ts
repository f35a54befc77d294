import { describe, expect, test } from 'bun:test';
import { apply, dlq, enqueue, LeaseLostError, OnceqError, show, status, work } from '@onceq/core';
import { claimMany, effectResult } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import {
  effectsOf,
  enqueueDemo,
  freshStore,
  mustClaim,
  rejection,
  snapshot,
  throwingFor,
} from './harness.ts';

export function applySuite(name: string, factory: BackendFactory): void {
  describe(`${name}: apply and fencing`, () => {
    const env = freshStore(factory);

    test('an old generation is refused with a typed LeaseLostError (exit code 4) and nothing is written', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(store, { leaseSeconds: 2 });
      clock.set(1002);
      const current = await mustClaim(store);
      expect(current.generation).toBe(old.generation + 1);
      const before = await snapshot(store);
      const error = await rejection(apply(store, old, handlers.v1), LeaseLostError);
      expect(error).toBeInstanceOf(OnceqError);
      expect([error.code, error.exitCode, error.generation]).toEqual(['lease_lost', 4, 1]);
      expect(await snapshot(store)).toEqual(before);
      await apply(store, current, handlers.v1);
      expect(await effectsOf(store)).toHaveLength(1);
    });

    test('a generation that was never issued is refused and named as such', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      const error = await rejection(
        apply(store, { eventId: 'E0001', generation: lease.generation + 1 }, handlers.v1),
        LeaseLostError,
      );
      expect(error.message).toContain(`generation ${lease.generation + 1} was never issued`);
      expect(await effectsOf(store)).toEqual([]);
    });

    test('the lease running out while the handler runs: the fenced write finds it expired and writes nothing', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store); // lease_until 1030
      // First read (apply's fenced read of the payload): still valid. Second read (the
      // completion's fence, after the handler): expired.
      clock.script(lease.leaseUntil - 1, lease.leaseUntil);
      await rejection(apply(store, lease, handlers.v1), LeaseLostError);
      expect(await effectsOf(store)).toEqual([]);
      const stored = await show(store, 'E0001');
      expect([stored.state, stored.generation, stored.leaseUntil]).toEqual(['leased', 1, 1030]);
      expect(stored.effect).toBeNull();
    });

    test('apply reads the payload from the database, never from the caller’s copy of the lease', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      const tampered = { ...lease, payload: '{"amount_cents":9999999,"category":"bag"}' };
      const outcome = await apply(store, tampered, handlers.v1);
      expect(outcome).toEqual({
        eventId: 'E0001',
        outcome: 'done',
        effect: { category: 'book', amountCents: 100 },
      });
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 100 },
      ]);
    });

    test('the effect and the ACK commit together: an effect the table refuses leaves no ACK (the CHECK as second guard)', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const [lease] = await claimMany(store, { limit: 1 }); // E0001
      if (lease === undefined) throw new Error('nothing claimed');
      const before = await snapshot(store);
      // Past the runner's checks, straight into the driver's completion write: the effects
      // CHECK refuses amount 0 and the write, ACK included, rolls back.
      await expect(
        store.driver.complete(store, [
          {
            lease,
            ...effectResult({ category: 'book', amountCents: 0 }),
            failed: () => {
              throw new Error('no write(tx) to fail');
            },
          },
        ]),
      ).rejects.toThrow();
      expect(await snapshot(store)).toEqual(before);
      expect((await show(store, 'E0001')).state).toBe('leased');
    });

    test('apply after done is lease lost and writes no second effect', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      await apply(store, lease, handlers.v1);
      const before = await snapshot(store);
      const error = await rejection(apply(store, lease, handlers.v1), LeaseLostError);
      expect(error.message).toContain('done');
      expect(await snapshot(store)).toEqual(before);
    });

    test('a payload the handler rejects (toy under v1) goes dead with invalid_payload, whole in the DLQ', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0004', paid('toy', 3000))));
      const lease = await mustClaim(store);
      expect(await apply(store, lease, handlers.v1)).toMatchObject({
        eventId: 'E0004',
        outcome: 'dead',
        code: 'invalid_payload',
      });
      const dead = await dlq(store);
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({
        eventId: 'E0004',
        state: 'dead',
        attempts: 1,
        generation: 1,
        lastErrorCode: 'invalid_payload',
        payload: { amount_cents: 3000, category: 'toy' },
        payloadText: '{"amount_cents":3000,"category":"toy"}',
        effect: null,
      });
      expect(await effectsOf(store)).toEqual([]);
    });

    test('a handler throwing a plain Error is a temporary handler_error and the loop keeps going', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const flaky = throwingFor(handlers.v2, ['E0002'], () => new Error('socket hang up'));
      const summary = await work(store, flaky);
      expect(summary).toMatchObject({ claimed: 4, done: 3, retried: 1, dead: 0, lost: 0 });
      const e2 = await show(store, 'E0002');
      expect(e2).toMatchObject({
        state: 'ready',
        attempts: 1,
        availableAt: 1001,
        lastErrorCode: 'handler_error',
      });
      expect(e2.lastErrorDetail).toContain('socket hang up');
      expect((await status(store)).total).toBe(18000);
    });
  });
}
