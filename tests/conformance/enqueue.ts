import { describe, expect, test } from 'bun:test';
import { BatchRejectedError, enqueue, NotFoundError, show, status, work } from '@onceq/core';
import { findCounterDrift } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import {
  type BackendFactory,
  batch,
  DEMO_BATCH,
  DEMO_LINES,
  eventId,
  line,
  paid,
} from '../support/factories.ts';
import { enqueueDemo, freshStore, rejection, snapshot } from './harness.ts';

const EMPTY = { ready: 0, leased: 0, done: 0, dead: 0 };

export function enqueueSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: enqueue`, () => {
    const env = freshStore(factory);

    test('the demo input is 4 accepted and 1 duplicate, stored ready with its canonical payload', async () => {
      const { store } = env();
      await enqueueDemo(store);
      expect((await status(store)).messages).toEqual({ ...EMPTY, ready: 4 });
      const e1 = await show(store, 'E0001');
      expect(e1.payloadText).toBe('{"amount_cents":10000,"category":"book"}');
      expect([e1.state, e1.attempts, e1.generation, e1.availableAt]).toEqual(['ready', 0, 0, 1000]);
    });

    test('the same five lines again are 0 accepted, 5 duplicates, and leave the money unchanged', async () => {
      const { store } = env();
      await enqueueDemo(store);
      expect(await enqueue(store, DEMO_BATCH)).toEqual({ accepted: 0, duplicates: 5 });
      await work(store, handlers.v1);
      const money = await status(store);
      expect(money.total).toBe(17000);
      expect(await enqueue(store, DEMO_BATCH)).toEqual({ accepted: 0, duplicates: 5 });
      expect(await status(store)).toEqual(money);
    });

    test('a payload with other key order and whitespace is a duplicate, not a conflict', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 10000))));
      const reordered = '{ "amount_cents" : 10000 ,\t"category" : "book" }';
      expect(await enqueue(store, batch(line('E0001', reordered)))).toEqual({
        accepted: 0,
        duplicates: 1,
      });
      expect((await show(store, 'E0001')).payloadText).toBe(
        '{"amount_cents":10000,"category":"book"}',
      );
    });

    test('an integer and a float amount are different payloads: 10000 vs 10000.0 is a conflict', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 10000))));
      const before = await snapshot(store);
      const error = await rejection(
        enqueue(store, batch(line('E0001', '{"category":"book","amount_cents":10000.0}'))),
        BatchRejectedError,
      );
      expect(error.exitCode).toBe(3);
      expect(error.issues.map((i) => i.line)).toEqual([1]);
      expect(await snapshot(store)).toEqual(before);
    });

    test('a conflict against the store rejects the whole batch, its new lines included: nothing is written', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const before = await snapshot(store);
      const error = await rejection(
        enqueue(
          store,
          batch(
            line('E0005', paid('bag', 700)),
            line('E0002', paid('pen', 2500)), // stored as 2000
            line('E0006', paid('pen', 800)),
          ),
        ),
        BatchRejectedError,
      );
      expect(error.issues).toHaveLength(1);
      expect(error.issues[0]?.line).toBe(2);
      expect(error.issues[0]?.reason).toContain('E0002');
      await rejection(show(store, 'E0005'), NotFoundError);
      await rejection(show(store, 'E0006'), NotFoundError);
      expect((await status(store)).messages).toEqual({ ...EMPTY, ready: 4 });
      expect((await show(store, 'E0002')).payloadText).toBe(
        '{"amount_cents":2000,"category":"pen"}',
      );
      expect(await snapshot(store)).toEqual(before);
    });

    test('a conflict inside one batch rejects it before anything is written', async () => {
      const { store } = env();
      const error = await rejection(
        enqueue(
          store,
          batch(
            line('E0001', paid('book', 100)),
            line('E0002', paid('pen', 200)),
            line('E0001', paid('book', 101)),
          ),
        ),
        BatchRejectedError,
      );
      expect(error.issues.map((i) => i.line)).toEqual([3]);
      expect(await snapshot(store)).toEqual({ messages: [], effects: [] });
    });

    test('a repeated event is a duplicate against a done and against a dead message, which stay as they are', async () => {
      const { store } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1);
      expect((await show(store, 'E0001')).state).toBe('done');
      expect((await show(store, 'E0004')).state).toBe('dead');
      const before = await snapshot(store);
      expect(await enqueue(store, batch(DEMO_LINES[0] as string, DEMO_LINES[4] as string))).toEqual(
        { accepted: 0, duplicates: 2 },
      );
      expect(await snapshot(store)).toEqual(before);
    });

    test('a conflict against a dead message is still a conflict: a stored payload is never corrected', async () => {
      const { store } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1);
      const before = await snapshot(store);
      await rejection(enqueue(store, batch(line('E0004', paid('book', 3000)))), BatchRejectedError);
      expect(await snapshot(store)).toEqual(before);
    });

    // The INSERT goes first (ON CONFLICT DO NOTHING) and the stored rows are read only
    // when some line was not new: a conflict found then must still undo the rows the
    // same transaction already inserted, in both INSERT chunks (500 rows, then the rest).
    test('a conflict found after the insert, in a 600-line batch, still leaves nothing written', async () => {
      const { store } = env();
      await enqueue(store, batch(line(eventId(550), paid('bag', 550))));
      const before = await snapshot(store);
      const lines = Array.from({ length: 600 }, (_, i) =>
        line(eventId(i), paid('book', i === 550 ? 551 : i + 1)),
      );
      const error = await rejection(enqueue(store, batch(...lines)), BatchRejectedError);
      expect(error.exitCode).toBe(3);
      expect(error.issues).toEqual([
        {
          line: 551,
          reason: `event_id ${eventId(550)} is already stored with a different payload (a correction needs a new event id)`,
        },
      ]);
      expect(await snapshot(store)).toEqual(before);
      expect((await status(store)).messages).toEqual({ ...EMPTY, ready: 1 });
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('a batch sent again with one line changed in its second half is rejected whole, nothing written', async () => {
      const { store } = env();
      const lines = Array.from({ length: 600 }, (_, i) => line(eventId(i), paid('pen', i + 1)));
      expect(await enqueue(store, batch(...lines.slice(0, 580)))).toEqual({
        accepted: 580,
        duplicates: 0,
      });
      const before = await snapshot(store);
      lines[570] = line(eventId(570), paid('pen', 9));
      const error = await rejection(enqueue(store, batch(...lines)), BatchRejectedError);
      expect(error.issues.map((i) => i.line)).toEqual([571]);
      expect(await snapshot(store)).toEqual(before);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('stored lines spread over both insert chunks are duplicates; the new ones are accepted and counted', async () => {
      const { store } = env();
      const lines = Array.from({ length: 600 }, (_, i) => line(eventId(i), paid('book', i + 1)));
      const stored = lines.filter((_, i) => i % 7 === 0);
      expect(await enqueue(store, batch(...stored))).toEqual({ accepted: 86, duplicates: 0 });
      expect(await enqueue(store, batch(...lines, lines[3] as string))).toEqual({
        accepted: 514,
        duplicates: 87,
      });
      expect((await status(store)).messages).toEqual({ ...EMPTY, ready: 600 });
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test("a batch's new messages are written in event-id order, whatever its lines' order; a key's positions follow the lines", async () => {
      const { store } = env();
      // Where each row sits: SQLite's rowid, PostgreSQL's heap position (a new table
      // fills its pages in insert order).
      const physical = factory.name === 'sqlite' ? 'rowid' : 'ctid';
      const stored = async () =>
        (
          await store.read((x) =>
            x.query<{ event_id: string; seq: unknown; state: string }>(
              `SELECT event_id, seq, state FROM ${x.dialect.table('messages')} ORDER BY ${physical}`,
            ),
          )
        ).rows.map((r) => `${r.event_id}:${r.seq ?? '-'}:${r.state}`);
      await enqueue(
        store,
        batch(
          line('E0009', paid('pen', 9)),
          line('E0002', paid('pen', 2)),
          line('E0005', paid('pen', 5)),
        ),
      );
      await enqueue(
        store,
        batch(
          line('E0019', paid('bag', 19)),
          line('E0012', paid('bag', 12)),
          line('E0015', paid('bag', 15)),
        ),
        { key: 'order-1' },
      );
      expect(await stored()).toEqual([
        'E0002:-:ready',
        'E0005:-:ready',
        'E0009:-:ready',
        'E0012:2:waiting',
        'E0015:3:waiting',
        'E0019:1:ready',
      ]);
    });
  });
}
