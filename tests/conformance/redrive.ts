import { describe, expect, test } from 'bun:test';
import {
  apply,
  enqueue,
  fail,
  LeaseLostError,
  NotDeadError,
  NotFoundError,
  previewRedrive,
  redrive,
  show,
  status,
  work,
} from '@onceq/core';
import { failingOnce } from '@onceq/demo/failing-once.ts';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { enqueueDemo, freshStore, mustClaim, rejection, snapshot } from './harness.ts';

export function redriveSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: redrive`, () => {
    const env = freshStore(factory);

    /** E0001 done, E0002 ready (retry), E0003 leased, E0004 dead. */
    async function oneOfEach() {
      const { store } = env();
      await enqueueDemo(store);
      await apply(store, await mustClaim(store), handlers.v1);
      await apply(store, await mustClaim(store), failingOnce(handlers.v1, new Set(['E0002'])));
      await mustClaim(store);
      await apply(store, await mustClaim(store), handlers.v1);
      expect((await status(store)).messages).toEqual({ ready: 1, leased: 1, done: 1, dead: 1 });
      return store;
    }

    test('only dead messages are redriven: ready, leased or done is refused and nothing changes, even mixed with dead ids', async () => {
      const store = await oneOfEach();
      const before = await snapshot(store);
      for (const alive of ['E0001', 'E0002', 'E0003']) {
        const error = await rejection(redrive(store, ['E0004', alive]), NotDeadError);
        expect([error.code, error.exitCode]).toEqual(['not_dead', 4]);
        expect(error.eventIds).toEqual([alive]);
      }
      await rejection(redrive(store, ['E0001', 'E0002', 'E0003']), NotDeadError);
      expect(await snapshot(store)).toEqual(before);
    });

    test('an unknown id is NotFoundError and the dead ids named with it stay dead', async () => {
      const store = await oneOfEach();
      const before = await snapshot(store);
      const error = await rejection(redrive(store, ['E0004', 'E0999']), NotFoundError);
      expect([error.eventId, error.exitCode]).toEqual(['E0999', 4]);
      expect(await snapshot(store)).toEqual(before);
    });

    test('redrive resets attempts to 0 and makes it ready now, keeping generation and payload', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0004', paid('toy', 3000))));
      await apply(store, await mustClaim(store), handlers.v1);
      const dead = await show(store, 'E0004');
      clock.set(1234);
      expect(await redrive(store, ['E0004'])).toEqual(['E0004']);
      const ready = await show(store, 'E0004');
      expect(ready).toMatchObject({
        state: 'ready',
        attempts: 0,
        availableAt: 1234,
        leaseUntil: null,
        generation: dead.generation,
        payloadText: dead.payloadText,
      });
      const next = await mustClaim(store);
      expect([next.attempt, next.generation]).toEqual([1, dead.generation + 1]);
    });

    test('a stale worker of the previous cycle is refused even when attempts is 1 again', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const stale = await mustClaim(store); // attempt 1, generation 1, valid until 1030
      await fail(store, stale, { kind: 'permanent', code: 'operator_said_so' });
      await redrive(store, ['E0001']);
      const fresh = await mustClaim(store); // attempt 1 again, generation 2
      expect([fresh.attempt, stale.attempt]).toEqual([1, 1]);
      expect(fresh.generation).toBe(stale.generation + 1);
      expect(store.clock()).toBeLessThan(stale.leaseUntil); // only the generation fences it

      const before = await snapshot(store);
      await rejection(apply(store, stale, handlers.v1), LeaseLostError);
      await rejection(fail(store, stale, { kind: 'temporary', code: 'x' }), LeaseLostError);
      expect(await snapshot(store)).toEqual(before);
      expect(await apply(store, fresh, handlers.v1)).toMatchObject({ outcome: 'done' });
    });

    test('the toy: dead again under v1 after a redrive; under v2 it is done, total 20000', async () => {
      const { store } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1);
      expect((await status(store)).total).toBe(17000);

      await redrive(store, ['E0004']);
      expect(await work(store, handlers.v1)).toMatchObject({ claimed: 1, dead: 1 });
      expect(await show(store, 'E0004')).toMatchObject({
        state: 'dead',
        attempts: 1,
        generation: 2,
        lastErrorCode: 'invalid_payload',
      });

      await redrive(store, 'all');
      expect(await work(store, handlers.v2)).toMatchObject({ claimed: 1, done: 1 });
      const final = await status(store);
      expect(final).toMatchObject({ total: 20000, effects: 4 });
      expect(final.messages).toEqual({ ready: 0, leased: 0, done: 4, dead: 0 });
      expect(final.totals).toEqual({ book: 15000, pen: 2000, toy: 3000 });
    });

    test('previewRedrive says what a handler would accept and changes nothing', async () => {
      const { store } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1);
      const before = await snapshot(store);
      expect(await previewRedrive(store, ['E0004'], handlers.v2)).toEqual([
        { eventId: 'E0004', accepted: true, code: null, detail: null },
      ]);
      expect(await previewRedrive(store, 'all', handlers.v1)).toMatchObject([
        { eventId: 'E0004', accepted: false, code: 'invalid_payload' },
      ]);
      await rejection(previewRedrive(store, ['E0001'], handlers.v2), NotDeadError);
      expect(await snapshot(store)).toEqual(before);
    });
  });
}
