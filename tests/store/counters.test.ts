// The maintained counters of migration 0004 (what `status` reads) stay equal to real
// counts through every kind of write, on both backends; PostgreSQL's delta rows are
// folded; a store of 0003 gets counters that match its rows on open.

import type { Database as BunDatabase } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  claim,
  enqueue,
  fail,
  type Handler,
  type MessageState,
  openStore,
  redrive,
  type StatusReport,
  type Store,
  skip,
  status,
  work,
} from '@onceq/core';
import { countsByQueue, prune, storageUse } from '@onceq/core/admin';
import { findCounterDrift, release } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { sql } from 'kysely';
import { enqueueDemo, freshStore } from '../conformance/harness.ts';
import { forEachBackend, onPostgres } from '../support/backends.ts';
import {
  type BackendFactory,
  batch,
  line,
  paid,
  postgresFactory,
  testClock,
} from '../support/factories.ts';
import { postgresStoreAt, sqliteStoreAt } from '../support/old-store.ts';
import { rawDb, rememberTarget } from '../support/raw-db.ts';

/** What `status` would say if it counted every row, as before migration 0004. */
async function counted(store: Store) {
  const { rows: states } = await rawDb(store, (db) =>
    sql<{ state: string; n: unknown }>`
    SELECT state, count(*) AS n FROM messages GROUP BY state`.execute(db),
  );
  const { rows: effects } = await rawDb(store, (db) =>
    sql<{ category: string; n: unknown; v: unknown }>`
    SELECT category, count(*) AS n, sum(amount_cents) AS v FROM effects GROUP BY category`.execute(
      db,
    ),
  );
  const messages: StatusReport['messages'] = { ready: 0, leased: 0, done: 0, dead: 0 };
  for (const r of states) messages[r.state as MessageState] = Number(r.n);
  const totals: Record<string, number> = {};
  for (const r of [...effects].sort((a, b) => (a.category < b.category ? -1 : 1)))
    totals[r.category] = Number(r.v);
  const effectCount = effects.reduce((sum, r) => sum + Number(r.n), 0);
  const total = Object.values(totals).reduce((sum, v) => sum + v, 0);
  return { messages, effects: effectCount, totals, total };
}

/** Messages by queue and state as `countsByQueue` gives them and as a real count does (zeros left out). */
async function expectQueueCounts(store: Store) {
  const { rows } = await rawDb(store, (db) =>
    sql<{ queue: string; state: string; n: unknown }>`
    SELECT queue, state, count(*) AS n FROM messages GROUP BY queue, state`.execute(db),
  );
  const put = (into: Record<string, Record<string, number>>, q: string, s: string, n: number) => {
    into[q] = { ...into[q], [s]: n };
  };
  const real: Record<string, Record<string, number>> = {};
  for (const r of rows) put(real, r.queue, r.state, Number(r.n));
  const read: Record<string, Record<string, number>> = {};
  for (const [queue, counts] of Object.entries(await countsByQueue(store))) {
    for (const [state, n] of Object.entries(counts)) if (n !== 0) put(read, queue, state, n);
  }
  expect(read).toEqual(real);
  expect(await findCounterDrift(store)).toEqual([]);
}

async function expectExact(store: Store) {
  expect(await status(store)).toEqual(await counted(store));
  expect(await findCounterDrift(store)).toEqual([]);
}

function countersSuite(factory: BackendFactory) {
  describe(`${factory.name}: maintained counters`, () => {
    const env = freshStore(factory);

    test('status equals real counts after enqueue, claim, ACK, fail, recovery, release, redrive and prune', async () => {
      const { store, clock } = env();
      await enqueueDemo(store);
      await expectExact(store);
      await work(store, handlers.v1); // three done, the toy dead
      await expectExact(store);
      await enqueue(
        store,
        batch(
          line('E0010', paid('bag', 700)),
          line('E0011', paid('pen', 600)),
          line('E0012', paid('book', 1)),
        ),
      );
      const first = await claim(store, { leaseSeconds: 5 });
      if (first === null) throw new Error('expected a claim');
      await fail(store, first, { kind: 'temporary', code: 'flaky' }); // leased → ready
      const second = await claim(store, { leaseSeconds: 5 });
      if (second === null) throw new Error('expected a claim');
      await release(store, second); // leased → ready
      await claim(store, { leaseSeconds: 5 });
      await expectExact(store); // one leased
      clock.advance(10); // its lease expires: the next claim recovers it
      await claim(store, { leaseSeconds: 5 });
      await expectExact(store);
      await redrive(store, 'all'); // dead → ready
      await expectExact(store);
      clock.advance(10);
      await work(store, handlers.v2);
      await expectExact(store);
      clock.advance(86_400);
      await prune(store, { doneOlderThanSeconds: 3600, deadOlderThanSeconds: 3600 });
      await expectExact(store);
      expect((await status(store)).messages.done).toBe(7);
    });

    test('live and pruned events and the kept payload bytes follow enqueue, prune and forget', async () => {
      const { store, clock } = env();
      const payloads = [
        paid('book', 1),
        paid('pen', 20),
        { category: 'bücher ✓', amount_cents: 300 },
      ];
      await enqueue(
        store,
        batch(...payloads.map((p, i) => line(`E000${i + 1}`, p)), line('E0001', paid('book', 1))),
      );
      // What the rows hold, measured here in UTF-8 bytes, not by the database.
      const kept = async () => {
        const { rows } = await rawDb(store, (db) =>
          sql<{ payload: string }>`SELECT payload FROM messages WHERE payload IS NOT NULL`.execute(
            db,
          ),
        );
        return rows.reduce((sum, r) => sum + Buffer.byteLength(r.payload), 0);
      };
      const bytes = await kept();
      expect(bytes).toBeGreaterThan(JSON.stringify(payloads).length - 4); // ü and ✓ take more than a byte
      expect(await storageUse(store)).toMatchObject({
        events: 3,
        live: 3,
        pruned: 0,
        payloadBytes: bytes,
        bytesPerPrunedEvent: null,
      });
      await work(store, handlers.v1); // book and pen done; the third's category is unknown: dead
      clock.advance(86_400);
      await prune(store, { doneOlderThanSeconds: 3600 });
      const afterPrune = await storageUse(store);
      expect(afterPrune).toMatchObject({
        events: 3,
        live: 1,
        pruned: 2,
        payloadBytes: await kept(),
      });
      expect(afterPrune.payloadBytes).toBeLessThan(bytes);
      // The estimate charges every event the same share; a live one adds its payload, a
      // tombstone its 64-character hash.
      const { bytesPerLiveEvent, bytesPerPrunedEvent } = afterPrune;
      if (bytesPerLiveEvent === null || bytesPerPrunedEvent === null)
        throw new Error('expected both');
      expect(
        Math.abs(bytesPerLiveEvent - bytesPerPrunedEvent - (afterPrune.payloadBytes - 64)),
      ).toBeLessThanOrEqual(1);
      await expectExact(store);
      clock.advance(5 * 86_400);
      await prune(store, { forgetOlderThanSeconds: 4 * 86_400 });
      expect(await storageUse(store)).toMatchObject({ events: 1, live: 1, pruned: 0 });
      await expectExact(store);
    });

    test('counts by queue equal real counts after enqueue, claim, ACK, fail, recovery, release, key release, skip, redrive and prune', async () => {
      const { store, clock } = env();
      const all = { queues: ['default', 'payments', 'refunds'] };
      await enqueueDemo(store); // default: E0004 (toy) dies under v1
      await enqueue(
        store,
        [
          { eventId: 'E0010', payload: paid('toy', 1), key: 'K' },
          { eventId: 'E0011', payload: paid('book', 2), key: 'K' },
          { eventId: 'E0012', payload: paid('book', 3), key: 'K' },
          { eventId: 'E0013', payload: paid('pen', 4) },
        ],
        { queue: 'payments' },
      );
      await enqueue(store, batch(line('E0020', paid('pen', 5)), line('E0021', paid('bag', 6))), {
        queue: 'refunds',
      });
      await expectQueueCounts(store);
      await work(store, handlers.v1, all); // E0010 dies and blocks K: E0011, E0012 wait
      await expectQueueCounts(store);
      expect((await countsByQueue(store)).payments).toMatchObject({ dead: 1, waiting: 2 });
      await enqueue(store, batch(line('E0022', paid('bag', 7))), { queue: 'refunds' });
      const first = await claim(store, { queue: 'refunds', leaseSeconds: 5 });
      if (first === null) throw new Error('expected a claim');
      await fail(store, first, { kind: 'temporary', code: 'flaky' }); // leased → ready
      clock.advance(2);
      const second = await claim(store, { queue: 'refunds', leaseSeconds: 5 });
      if (second === null) throw new Error('expected a claim');
      await release(store, second); // leased → ready
      await claim(store, { queue: 'refunds', leaseSeconds: 5 });
      await expectQueueCounts(store); // one leased in refunds
      clock.advance(10); // its lease expires: the next claim of refunds recovers it
      await claim(store, { queue: 'refunds', leaseSeconds: 5 });
      await expectQueueCounts(store);
      await skip(store, ['E0010']); // dead → skipped, and E0011 released: waiting → ready
      await expectQueueCounts(store);
      await redrive(store, 'all'); // default's E0004: dead → ready
      await expectQueueCounts(store);
      clock.advance(10);
      await work(store, handlers.v2, all);
      await expectQueueCounts(store);
      // E0022's last lease ran out on its third claim: dead (lease_expired) at the recovery.
      expect(await countsByQueue(store)).toEqual({
        default: { ready: 0, leased: 0, done: 4, dead: 0 },
        payments: { ready: 0, leased: 0, done: 3, dead: 0, skipped: 1 },
        refunds: { ready: 0, leased: 0, done: 2, dead: 1 },
      });
      clock.advance(86_400);
      await prune(store, { doneOlderThanSeconds: 3600, deadOlderThanSeconds: 3600 });
      await expectQueueCounts(store);
    });

    test('status equals real counts after batches of completions, one of whose writes throws', async () => {
      const { store, clock } = env();
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 1)),
          line('E0002', paid('pen', 2)),
          line('E0003', paid('bag', 3)),
          line('E0004', paid('book', 4)),
        ),
      );
      let failing = 'E0002';
      const handler: Handler = (payload, context) => {
        if (context.eventId === 'E0004') return handlers.v1(payload, context);
        return {
          async write() {
            if (context.eventId === failing) throw new Error('boom');
          },
          summary: `none ${context.eventId}`,
        };
      };
      // The batch's ACKs in one statement, rolled back when E0002's write throws; then
      // each message on its own: three ACKs and one failure (leased → ready).
      await work(store, handler, { batch: 4, max: 4 });
      await expectExact(store);
      expect((await status(store)).messages).toEqual({ ready: 1, leased: 0, done: 3, dead: 0 });
      // A batch whose writes all succeed: its ACKs in one statement, committed.
      failing = '';
      await enqueue(store, batch(line('E0005', paid('pen', 5))));
      clock.advance(60);
      await work(store, handler, { batch: 4 });
      await expectExact(store);
      expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 5, dead: 0 });
    });
  });
}

forEachBackend('maintained counters', countersSuite);

onPostgres('counter delta rows', () =>
  describe('postgres: counter delta rows', () => {
    const env = freshStore(postgresFactory);

    test('are folded: after 300 write statements the table holds far fewer rows, and a fold changes no total', async () => {
      const { store } = env();
      for (let i = 0; i < 150; i++) {
        await enqueue(store, batch(line(`E${String(i).padStart(4, '0')}`, paid('book', 100 + i))));
        await work(store, handlers.v1, { max: 1 });
      }
      const rows = async () =>
        Number(
          (
            await rawDb(store, (db) =>
              sql<{ n: unknown }>`SELECT count(*) AS n FROM onceq_counts`.execute(db),
            )
          ).rows[0]?.n,
        );
      // Every statement appends up to a few delta rows (about 600 here without folding);
      // a fold every 32nd claim or ACK of the store keeps it far below, every run alike.
      expect(await rows()).toBeLessThan(300);
      const before = await status(store);
      await rawDb(store, (db) => sql`SELECT onceq_counts_fold()`.execute(db));
      // ready, leased, done (no message ever died here), book and the kept payloads: the
      // default queue has no rows of its own (its counts are the store's less the other
      // queues').
      expect(await rows()).toBe(5);
      expect(await status(store)).toEqual(before);
      await expectExact(store);
    });
  }),
);

describe('a store of 0003 gets counters matching its rows on open', () => {
  const ROWS = `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
      lease_until, enqueued_at, updated_at) VALUES
    ('E0001', '{"amount_cents":100,"category":"book"}', 'done', 1, 1, 1000, NULL, 1000, 1000),
    ('E0002', '{"amount_cents":250,"category":"book"}', 'done', 1, 1, 1000, NULL, 1000, 1000),
    ('E0003', '{"amount_cents":300,"category":"pen"}', 'done', 1, 1, 1000, NULL, 1000, 1000),
    ('E0004', '{"amount_cents":1,"category":"toy"}', 'dead', 1, 1, 1000, NULL, 1000, 1001),
    ('E0005', '{"amount_cents":5,"category":"bag"}', 'leased', 1, 1, 1000, 2000, 1000, 1000),
    ('E0006', '{"amount_cents":6,"category":"bag"}', 'ready', 0, 0, 1000, NULL, 1000, 1000)`;
  const EFFECTS = `INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES
    ('E0001', 'book', 100, 1000), ('E0002', 'book', 250, 1000), ('E0003', 'pen', 300, 1000)`;
  const expected = {
    report: {
      messages: { ready: 1, leased: 1, done: 3, dead: 1 },
      effects: 3,
      totals: { book: 350, pen: 300 },
      total: 650,
    },
  };

  test('sqlite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-counters-'));
    try {
      const path = join(dir, 'store-0003.db');
      await sqliteStoreAt(path, '0003_streams', (raw: BunDatabase) => {
        raw.run(ROWS);
        raw.run(EFFECTS);
      });
      const store = await openStore(path, { clock: testClock(1500) });
      try {
        expect(await status(store)).toEqual(expected.report);
        await expectExact(store);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  onPostgres('a store of 0003 gets counters on open', (url) =>
    test('postgres', async () => {
      const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
      try {
        await postgresStoreAt(url, schema, '0003_streams', async (db: SQL) => {
          await db.unsafe(`SET search_path TO ${schema}; ${ROWS}; ${EFFECTS}`);
        });
        const store = await openStore(url, { schema, clock: testClock(1500) });
        rememberTarget(store, { target: url, schema });
        try {
          expect(await status(store)).toEqual(expected.report);
          await expectExact(store);
        } finally {
          await store.close();
        }
      } finally {
        const admin = new SQL(url);
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.close();
      }
    }),
  );
});
