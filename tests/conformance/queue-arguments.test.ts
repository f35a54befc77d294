/**
 * The arguments of claim, extend, release, enqueue and the redrive preview: the checks (a lease or a limit below 1 or not whole is
 * refused before anything is written, exactly 1 is fine), empty lists, an already parsed
 * batch, and what a preview's handler is told. Both backends.
 */
import { describe, expect, test } from 'bun:test';
import { dlq, enqueue, type Handler, previewRedrive, show, work } from '@onceq/core';
import { claimMany, extendMany, parseBatch, releaseMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { forEachBackend } from '../support/backends.ts';
import { type BackendFactory, batch, line, nEvents, paid } from '../support/factories.ts';
import { freshStore, mustClaim, snapshot } from './harness.ts';

function queueArguments(factory: BackendFactory): void {
  describe(`${factory.name}: queue arguments`, () => {
    const env = freshStore(factory);

    test('claimMany refuses a limit or a lease below 1 or not whole, writing nothing', async () => {
      const { store } = env();
      await enqueue(store, nEvents(1).jsonl);
      const before = await snapshot(store);
      for (const options of [
        { limit: 0 },
        { limit: 1.5 },
        { leaseSeconds: 0 },
        { leaseSeconds: 1.5 },
      ]) {
        await expect(claimMany(store, options)).rejects.toBeInstanceOf(RangeError);
      }
      expect(await snapshot(store)).toEqual(before);
      const [lease] = await claimMany(store, { limit: 1, leaseSeconds: 1 });
      expect(lease?.leaseUntil).toBe(1001);
    });

    test('extendMany refuses a lease below 1 or not whole; 1 second is fine; empty lists are empty results', async () => {
      const { store } = env();
      await enqueue(store, nEvents(1).jsonl);
      const lease = await mustClaim(store);
      for (const seconds of [0, 1.5]) {
        await expect(extendMany(store, [lease], seconds)).rejects.toBeInstanceOf(RangeError);
      }
      expect((await show(store, 'E0001')).leaseUntil).toBe(1030);
      const { extended, lost } = await extendMany(store, [lease], 1);
      expect([extended.length, lost.length]).toEqual([1, 0]);
      expect((await show(store, 'E0001')).leaseUntil).toBe(1001);
      expect(await extendMany(store, [])).toEqual({ extended: [], lost: [] });
      expect(await releaseMany(store, [])).toEqual({ released: [], lost: [] });
    });

    test('enqueue takes an already parsed batch as it is', async () => {
      const { store } = env();
      const parsed = parseBatch(
        batch(line('E0001', paid('book', 100)), line('E0001', paid('book', 100))),
      );
      expect(await enqueue(store, parsed)).toEqual({ accepted: 1, duplicates: 1 });
      expect((await show(store, 'E0001')).state).toBe('ready');
    });

    test("previewRedrive tells the handler the next cycle's generation and attempt 1; an empty selection previews nothing", async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('toy', 100))));
      await work(store, handlers.v1);
      expect((await dlq(store)).map((m) => m.eventId)).toEqual(['E0001']);
      const { generation } = await show(store, 'E0001');
      const seen: unknown[] = [];
      const recording: Handler = (payload, message) => {
        seen.push(message);
        return handlers.v2(payload, message);
      };
      const preview = await previewRedrive(store, ['E0001'], recording);
      expect(preview).toEqual([{ eventId: 'E0001', accepted: true, code: null, detail: null }]);
      expect(seen).toEqual([
        expect.objectContaining({ eventId: 'E0001', attempt: 1, generation: generation + 1 }),
      ]);
      expect(await previewRedrive(store, [], recording)).toEqual([]);
      expect(seen).toHaveLength(1);
    });
  });
}

forEachBackend('queue arguments', queueArguments);
