import { describe, expect, test } from 'bun:test';
import { BatchRejectedError, enqueue, type Handler, status, work } from '@onceq/core';
import { doctor, forgottenBefore, PruneArgumentError, prune, storageUse } from '@onceq/core/admin';
import { parseIdPolicy, uuidV7Millis } from '@onceq/core/internal';
import { listDeliveries } from '@onceq/core/webhooks';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';
import { freshStore, rejection, snapshot } from './harness.ts';

const DAY = 86_400;

/** A UUIDv7 made at `seconds` (Unix), told apart by `n`. */
function v7(seconds: number, n: number): string {
  const hex = (seconds * 1000).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7abc-8def-${String(n).padStart(12, '0')}`;
}

/**
 * The dedup window (docs/operations.md): `prune`'s `forgetOlderThanSeconds` deletes old
 * tombstones and records how far the store forgot; enqueue refuses a time-ordered id
 * made before that horizon which the store no longer holds.
 */
export function dedupWindowSuite(name: string, factory: BackendFactory): void {
  const general: BackendFactory = {
    ...factory,
    open: (clock) => factory.open(clock, parseIdPolicy('general')),
  };
  describe(`${name}: the dedup window`, () => {
    const env = freshStore(general);
    const A = v7(1000, 1);
    const B = 'evt_b';

    /**
     * At 1000: A (a UUIDv7 made at 1000) and B (an id without a readable time) done.
     * At 1000 + 100 days: C (a UUIDv7 made then) done. A and B pruned, C not.
     */
    async function oldAndNew() {
      const { store, clock } = env();
      await enqueue(store, batch(line(A, paid('book', 100)), line(B, paid('pen', 200))));
      await work(store, handlers.v1);
      clock.advance(100 * DAY);
      const C = v7(clock(), 3);
      await enqueue(store, batch(line(C, paid('bag', 300))));
      await work(store, handlers.v1);
      expect((await prune(store, { doneOlderThanSeconds: 30 * DAY })).done).toBe(2);
      return { store, clock, C };
    }

    test('by default tombstones stay forever: nothing forgotten, an old repeat still a duplicate', async () => {
      const { store } = await oldAndNew();
      expect(await forgottenBefore(store)).toBe(0);
      expect(await enqueue(store, batch(line(A, paid('book', 100))))).toEqual({
        accepted: 0,
        duplicates: 1,
      });
    });

    test('forgetting deletes tombstones finished before the horizon with their effects, records the horizon, and keeps the store healthy', async () => {
      const { store, clock, C } = await oldAndNew();
      const result = await prune(store, { forgetOlderThanSeconds: 90 * DAY });
      expect([result.forgotten, result.forgottenBefore]).toEqual([2, clock() - 90 * DAY]);
      expect(await forgottenBefore(store)).toBe(clock() - 90 * DAY);
      const after = await status(store);
      expect(after.messages).toEqual({ ready: 0, leased: 0, done: 1, dead: 0 });
      expect([after.effects, after.total]).toEqual([1, 300]);
      expect((await snapshot(store)).messages.map((m) => m.event_id)).toEqual([C]);
      expect((await doctor(store)).healthy).toBe(true);
      // What status --json reports of the store's size (onceq's tables on PostgreSQL).
      const use = await storageUse(store);
      expect([use.events, use.live, use.pruned]).toEqual([1, 1, 0]);
      expect(use.bytes).toBeGreaterThan(0);
      expect(use.bytesPerEvent).toBe(use.bytes);
      // A later, shorter run never moves the horizon back.
      await prune(store, { forgetOlderThanSeconds: 95 * DAY });
      expect(await forgottenBefore(store)).toBe(clock() - 90 * DAY);
    });

    test('a UUIDv7 made before the horizon and no longer held is refused naming the window, the whole batch with it; held and newer ids pass', async () => {
      const { store, clock, C } = await oldAndNew();
      await prune(store, { forgetOlderThanSeconds: 90 * DAY });
      const before = await snapshot(store);
      const D = v7(clock(), 4);
      const refused = await rejection(
        enqueue(store, batch(line(D, paid('toy', 400)), line(A, paid('book', 100)))),
        BatchRejectedError,
      );
      expect(refused.exitCode).toBe(3);
      expect(refused.issues).toHaveLength(1);
      expect(refused.issues[0]?.line).toBe(2);
      expect(refused.issues[0]?.reason).toContain(`event_id ${A} was made at`);
      expect(refused.issues[0]?.reason).toContain("before the store's dedup window");
      expect(await snapshot(store)).toEqual(before);
      // Made before the horizon but still held: an ordinary duplicate.
      const old = v7(1000, 9);
      expect(uuidV7Millis(old)).toBe(1_000_000);
      // C is newer than the horizon: a duplicate; D is new.
      expect(await enqueue(store, batch(line(C, paid('bag', 300))))).toEqual({
        accepted: 0,
        duplicates: 1,
      });
      expect(await enqueue(store, batch(line(D, paid('toy', 400))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
    });

    test('an id without a readable time that was forgotten is accepted as new', async () => {
      const { store } = await oldAndNew();
      await prune(store, { forgetOlderThanSeconds: 90 * DAY });
      expect(await enqueue(store, batch(line(B, paid('pen', 200))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
    });

    test('a UUIDv7 made before the horizon but still stored is a duplicate, not refused', async () => {
      const { store, clock } = env();
      const old = v7(1000, 7);
      clock.advance(100 * DAY);
      // Made at 1000 but first sent 100 days later: it finished after the horizon.
      await enqueue(store, batch(line(old, paid('book', 100))));
      await work(store, handlers.v1);
      await prune(store, { doneOlderThanSeconds: 0, forgetOlderThanSeconds: 90 * DAY });
      expect(await forgottenBefore(store)).toBe(clock() - 90 * DAY);
      expect(await enqueue(store, batch(line(old, paid('book', 100))))).toEqual({
        accepted: 0,
        duplicates: 1,
      });
    });

    test('below the 3-day floor a window is refused (exit 2, nothing changes) unless forced', async () => {
      const { store, clock } = await oldAndNew();
      const before = await snapshot(store);
      const refused = await rejection(
        prune(store, { forgetOlderThanSeconds: 2 * DAY }),
        PruneArgumentError,
      );
      expect(refused.exitCode).toBe(2);
      expect(refused.message).toContain('below the 3-day floor');
      expect(await snapshot(store)).toEqual(before);
      expect(await forgottenBefore(store)).toBe(0);
      const forced = await prune(store, { forgetOlderThanSeconds: 2 * DAY, force: true });
      expect(forced.forgotten).toBe(2);
      expect(await forgottenBefore(store)).toBe(clock() - 2 * DAY);
    });

    test('a dry run counts what would be forgotten and changes nothing, the horizon included', async () => {
      const { store } = await oldAndNew();
      const before = await snapshot(store);
      const result = await prune(store, { forgetOlderThanSeconds: 90 * DAY, dryRun: true });
      expect(result.forgotten).toBe(2);
      expect(await snapshot(store)).toEqual(before);
      expect(await forgottenBefore(store)).toBe(0);
    });

    test('only tombstones go: an old finished message that was never pruned stays, and small chunks forget everything', async () => {
      const { store, clock } = env();
      await enqueue(
        store,
        batch(...[1, 2, 3, 4, 5].map((n) => line(v7(1000, n), paid('book', n)))),
      );
      await work(store, handlers.v1);
      clock.advance(100 * DAY);
      await prune(store, { doneOlderThanSeconds: 30 * DAY, chunkSize: 2 });
      await enqueue(store, batch(line('never-pruned', paid('pen', 9))));
      await work(store, handlers.v1);
      clock.advance(100 * DAY);
      const result = await prune(store, { forgetOlderThanSeconds: 90 * DAY, chunkSize: 2 });
      expect(result.forgotten).toBe(5);
      expect((await snapshot(store)).messages.map((m) => m.event_id)).toEqual(['never-pruned']);
    });

    test('a forgotten keyed message takes its position with it; its key goes on in order', async () => {
      const { store, clock } = env();
      const keyed = (id: string, n: number) => ({
        eventId: id,
        payload: { category: 'book', amount_cents: n },
        key: 'K',
      });
      await enqueue(store, [keyed(v7(1000, 1), 1), keyed(v7(1000, 2), 2)]);
      await work(store, handlers.v1);
      clock.advance(100 * DAY);
      await prune(store, { doneOlderThanSeconds: 30 * DAY });
      expect((await prune(store, { forgetOlderThanSeconds: 90 * DAY })).forgotten).toBe(2);
      // Where the backend keeps a key's positions: PostgreSQL apart, SQLite on the rows.
      const positions = () =>
        rawDb(store, async (db) =>
          (store.kind === 'postgres'
            ? await db
                .selectFrom('message_keys')
                .select(['event_id', 'seq'])
                .orderBy('seq')
                .execute()
            : await db
                .selectFrom('messages')
                .select(['event_id', 'seq'])
                .where('ordering_key', 'is not', null)
                .orderBy('seq')
                .execute()
          ).map((r) => [r.event_id, Number(r.seq)]),
        );
      expect(await positions()).toEqual([]);
      const [third, fourth] = [v7(clock(), 3), v7(clock(), 4)];
      await enqueue(store, [keyed(third, 3), keyed(fourth, 4)]);
      expect(await positions()).toEqual([
        [third, 1],
        [fourth, 2],
      ]);
      await work(store, handlers.v1);
      const { messages } = await status(store);
      expect([messages.done, messages.waiting ?? 0]).toEqual([2, 0]);
      expect((await doctor(store)).healthy).toBe(true);
    });

    test('a tombstone whose webhook is still waiting to be sent is kept', async () => {
      const { store, clock } = env();
      const delivering: Handler = (_payload, context) => ({
        deliver: [{ to: 'hooks', body: { event: context.eventId } }],
      });
      await enqueue(store, batch(line(A, paid('book', 100))));
      await work(store, delivering);
      clock.advance(100 * DAY);
      await prune(store, { doneOlderThanSeconds: 30 * DAY });
      expect((await prune(store, { forgetOlderThanSeconds: 90 * DAY })).forgotten).toBe(0);
      expect((await listDeliveries(store)).map((d) => d.state)).toEqual(['pending']);
    });
  });
}
