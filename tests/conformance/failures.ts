import { describe, expect, test } from 'bun:test';
import { apply, claim, enqueue, fail, LeaseLostError, show, TemporaryFailure } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { effectsOf, freshStore, mustClaim, rejection, snapshot, throwingFor } from './harness.ts';

const ONE = batch(line('E0001', paid('book', 100)));

export function failuresSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: failures, backoff and attempt budget`, () => {
    const env = freshStore(factory);

    test('temporary failures back off 1 s then 2 s, and the third one is dead (max attempts 3)', async () => {
      const { store, clock } = env();
      await enqueue(store, ONE);
      const down = { kind: 'temporary', code: 'dependency_down' } as const;

      expect(await fail(store, await mustClaim(store), down)).toEqual({
        eventId: 'E0001',
        state: 'ready',
        availableAt: 1001,
      });
      expect(await claim(store)).toBeNull();

      clock.set(1001);
      const second = await mustClaim(store);
      expect([second.attempt, second.generation]).toEqual([2, 2]);
      expect(await fail(store, second, down)).toMatchObject({ state: 'ready', availableAt: 1003 });
      clock.set(1002);
      expect(await claim(store)).toBeNull();

      clock.set(1003);
      const third = await mustClaim(store);
      expect(third.attempt).toBe(3);
      expect(await fail(store, third, down)).toMatchObject({ state: 'dead' });
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'dead',
        attempts: 3,
        generation: 3,
        lastErrorCode: 'dependency_down',
        leaseUntil: null,
      });
      clock.set(2000);
      expect(await claim(store)).toBeNull();
    });

    test('a handler’s TemporaryFailure inside apply is retried with the same backoff', async () => {
      const { store, clock } = env();
      await enqueue(store, ONE);
      const down = throwingFor(handlers.v1, ['E0001'], () => new TemporaryFailure('db_down', 'x'));
      expect(await apply(store, await mustClaim(store), down)).toMatchObject({
        outcome: 'retry',
        code: 'db_down',
        availableAt: 1001,
      });
      clock.set(1001);
      expect(await apply(store, await mustClaim(store), down)).toMatchObject({
        outcome: 'retry',
        availableAt: 1003,
      });
      clock.set(1003);
      expect(await apply(store, await mustClaim(store), down)).toMatchObject({
        outcome: 'dead',
        code: 'db_down',
      });
      expect(await effectsOf(store)).toEqual([]);
    });

    test('silent deaths spend the budget: after three expired leases the next claim makes it dead (lease_expired)', async () => {
      const { store, clock } = env();
      await enqueue(store, ONE);
      for (let attempt = 1; attempt <= 3; attempt++) {
        const lease = await mustClaim(store, { leaseSeconds: 2 });
        expect([lease.attempt, lease.generation]).toEqual([attempt, attempt]);
        clock.set(lease.leaseUntil); // the worker never reports back
      }
      expect((await show(store, 'E0001')).state).toBe('leased');
      expect(await claim(store)).toBeNull();
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'dead',
        attempts: 3,
        generation: 3,
        leaseUntil: null,
        lastErrorCode: 'lease_expired',
      });
    });

    test('fail() is fenced: an old generation or an expired lease is refused and nothing changes', async () => {
      const { store, clock } = env();
      await enqueue(store, ONE);
      const old = await mustClaim(store, { leaseSeconds: 2 });
      clock.set(1002);
      const current = await mustClaim(store, { leaseSeconds: 2 });
      let before = await snapshot(store);
      const error = await rejection(
        fail(store, old, { kind: 'permanent', code: 'bad' }),
        LeaseLostError,
      );
      expect(error.exitCode).toBe(4);
      expect(await snapshot(store)).toEqual(before);

      clock.set(current.leaseUntil);
      before = await snapshot(store);
      await rejection(fail(store, current, { kind: 'temporary', code: 'down' }), LeaseLostError);
      expect(await snapshot(store)).toEqual(before);
    });

    test('a permanent failure goes straight to dead on the first attempt, with its code and detail', async () => {
      const { store } = env();
      await enqueue(store, ONE);
      const result = await fail(store, await mustClaim(store), {
        kind: 'permanent',
        code: 'merchant_closed',
        detail: 'the merchant account is closed',
      });
      expect(result.state).toBe('dead');
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'dead',
        attempts: 1,
        lastErrorCode: 'merchant_closed',
        lastErrorDetail: 'the merchant account is closed',
      });
    });
  });
}
