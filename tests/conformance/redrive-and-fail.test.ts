/**
 * Redrive and failure details, on both backends: redriving some dead messages leaves the other dead ones dead, a lease naming an event
 * id the store does not have is refused (lease lost) with nothing written, and what a
 * failure stores as its detail (the default sentence of its kind, at most 500 characters).
 */
import { describe, expect, test } from 'bun:test';
import { apply, dlq, enqueue, fail, LeaseLostError, redrive, show, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { forEachBackend } from '../support/backends.ts';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { enqueueDemo, freshStore, mustClaim, rejection, snapshot } from './harness.ts';

function redriveAndFail(factory: BackendFactory): void {
  describe(`${factory.name}: redrive and fail`, () => {
    const env = freshStore(factory);

    test('redriving one dead message leaves the other dead messages dead', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('toy', 100)), line('E0002', paid('toy', 200))));
      await work(store, handlers.v1);
      expect((await dlq(store)).map((m) => m.eventId)).toEqual(['E0001', 'E0002']);
      expect(await redrive(store, ['E0002'])).toEqual(['E0002']);
      expect((await show(store, 'E0001')).state).toBe('dead');
      expect((await show(store, 'E0002')).state).toBe('ready');
    });

    test('a lease for an event id the store does not have: lease lost, nothing written', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const before = await snapshot(store);
      const ghost = { eventId: 'E0999', generation: 1 };
      const applied = await rejection(apply(store, ghost, handlers.v1), LeaseLostError);
      expect(applied.message).toContain('no such message');
      await rejection(fail(store, ghost, { kind: 'permanent', code: 'x' }), LeaseLostError);
      expect(await snapshot(store)).toEqual(before);
    });

    test('a failure without a detail stores the default sentence of its kind; a long one is cut at 500', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 1)), line('E0002', paid('book', 2))));
      const first = await mustClaim(store);
      await fail(store, first, { kind: 'temporary', code: 'x' });
      expect((await show(store, first.eventId)).lastErrorDetail).toBe(
        'temporary failure reported by the worker',
      );
      const second = await mustClaim(store);
      await fail(store, second, { kind: 'permanent', code: 'y', detail: 'd'.repeat(600) });
      expect((await show(store, second.eventId)).lastErrorDetail).toBe('d'.repeat(500));
      clock.set(1001); // E0001's backoff of 1 s is over
      const third = await mustClaim(store);
      await fail(store, third, { kind: 'permanent', code: 'z' });
      expect((await show(store, third.eventId)).lastErrorDetail).toBe(
        'permanent failure reported by the worker',
      );
    });
  });
}

forEachBackend('redrive and fail', redriveAndFail);
