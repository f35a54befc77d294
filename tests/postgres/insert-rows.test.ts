/**
 * A completion's `insert` rows on PostgreSQL: a worker's batch of them is one statement
 * (the fenced ACKs, onceq's records and the rows, committing by itself), and a row's
 * values reach their columns the same way on that path and in the ACK's transaction
 * (`apply`), as the text a bound parameter would carry, JSON columns keeping JSON values.
 */
import { expect, test } from 'bun:test';
import { apply, claim, enqueue, type Handler, openStore, type Store, work } from '@onceq/core';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';
import { nEvents, testClock } from '../support/factories.ts';

/** A fresh schema with a table of the user's own, a store on it, `body`, then DROP. */
async function withSchema(
  url: string,
  body: (store: Store, admin: SQL, seen: string[], schema: string) => Promise<void>,
): Promise<void> {
  const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const seen: string[] = [];
  const store = await openStore(url, {
    schema,
    clock: testClock(),
    onQuery: (text) => seen.push(text),
  });
  const admin = new SQL(url);
  try {
    await admin.unsafe(`CREATE TABLE "${schema}".user_rows (
      event_id TEXT PRIMARY KEY, label TEXT, amount INTEGER, big BIGINT, ratio NUMERIC,
      doc JSONB, raw JSON, flag BOOLEAN, tags TEXT[])`);
    await body(store, admin, seen, schema);
  } finally {
    await store.close();
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.close();
  }
}

/** A row of every kind of value, the event id in it. */
const everyKind: Handler = (_payload, context) => ({
  insert: {
    [`${context.store.schema}.user_rows`]: {
      event_id: context.eventId,
      label: Number(context.eventId.slice(1)) % 2 === 1 ? { nested: [1, 'two'] } : 1e21,
      amount: -1299,
      big: 2n ** 62n,
      ratio: 1e-7,
      doc: { currency: 'EUR', cents: 0 },
      raw: ['a', true, null],
      flag: false,
      tags: '{red,green}',
    },
  },
  summary: `row ${context.eventId}`,
});

describePostgres('insert rows on PostgreSQL', (url) => {
  test('a column named __proto__ is a column like any other', async () => {
    await withSchema(url, async (store, admin, _seen, schema) => {
      await admin.unsafe(`CREATE TABLE "${schema}".odd (event_id TEXT, "__proto__" TEXT)`);
      await enqueue(store, nEvents(2).jsonl);
      const handler: Handler = (_payload, context) => ({
        insert: {
          [`${context.store.schema}.odd`]: JSON.parse(
            `{"event_id":"${context.eventId}","__proto__":"kept"}`,
          ),
        },
      });
      expect(await work(store, handler, { batch: 10, max: 2 })).toMatchObject({ done: 2 });
      const rows = await admin.unsafe(
        `SELECT event_id, "__proto__" AS proto FROM "${schema}".odd ORDER BY event_id`,
      );
      expect(rows.map((r: { event_id: string; proto: string }) => [r.event_id, r.proto])).toEqual([
        ['E0001', 'kept'],
        ['E0002', 'kept'],
      ]);
    });
  });

  test("unqualified names resolve by the connection's search_path (public), in insert, tx.query and tx.db alike; context.store names the store", async () => {
    await withSchema(url, async (store, admin, _seen, schema) => {
      const table = `app_${schema}`;
      await admin.unsafe(`CREATE TABLE public.${table} (event_id TEXT, how TEXT)`);
      try {
        await enqueue(store, nEvents(3).jsonl);
        const stores: unknown[] = [];
        const handler: Handler = (_payload, context) => {
          stores.push(context.store);
          const row = (how: string) => ({ event_id: context.eventId, how });
          if (context.eventId === 'E0001') return { insert: { [table]: row('insert') } };
          return {
            insert: { [table]: row('insert') },
            async write(tx) {
              await tx.query(`INSERT INTO ${table} (event_id, how) VALUES ($1, $2)`, [
                context.eventId,
                'query',
              ]);
              await tx.db.insertInto(table).values(row('db')).execute();
            },
          };
        };
        // E0001 alone is the one-statement path; E0002 and E0003 the ACK's transaction.
        expect(await work(store, handler, { batch: 1, max: 1 })).toMatchObject({ done: 1 });
        expect(await work(store, handler, { batch: 10 })).toMatchObject({ done: 2, dead: 0 });
        expect(stores).toEqual([0, 1, 2].map(() => ({ kind: 'postgres', schema })));
        const rows = await admin.unsafe(
          `SELECT event_id, how FROM public.${table} ORDER BY event_id, how`,
        );
        expect(
          rows.map((r: { event_id: string; how: string }) => `${r.event_id} ${r.how}`),
        ).toEqual([
          'E0001 insert',
          'E0002 db',
          'E0002 insert',
          'E0002 query',
          'E0003 db',
          'E0003 insert',
          'E0003 query',
        ]);
      } finally {
        await admin.unsafe(`DROP TABLE IF EXISTS public.${table}`);
      }
    });
  });

  test("a worker's batch of insert-only completions is one statement: its ACKs, records and rows", async () => {
    await withSchema(url, async (store, admin, seen, schema) => {
      await enqueue(store, nEvents(3).jsonl);
      const claimsBefore = seen.length;
      const summary = await work(store, everyKind, { batch: 10, max: 3 });
      expect(summary).toMatchObject({ claimed: 3, done: 3 });
      const after = seen.slice(claimsBefore);
      const writes = after.filter((text) => text.includes('user_rows'));
      expect(writes).toHaveLength(1);
      expect(writes[0]).toContain('UPDATE');
      expect(writes[0]).toContain('completions');
      const [count] = await admin.unsafe(
        `SELECT (SELECT count(*) FROM "${schema}".user_rows) AS rows,
           (SELECT count(*) FROM "${schema}".completions) AS records`,
      );
      expect([Number(count.rows), Number(count.records)]).toEqual([3, 3]);
    });
  });

  test('a row is stored alike by the one statement and in the ACK transaction (apply)', async () => {
    await withSchema(url, async (store, admin, _seen, schema) => {
      await enqueue(store, nEvents(4).jsonl);
      // E0001 and E0002 through a worker's batch (one statement), E0003 and E0004 by apply.
      expect(await work(store, everyKind, { batch: 2, max: 2 })).toMatchObject({ done: 2 });
      for (let i = 0; i < 2; i++) {
        const lease = await claim(store);
        if (lease === null) throw new Error('nothing to claim');
        expect((await apply(store, lease, everyKind)).outcome).toBe('done');
      }
      const rows = await admin.unsafe(
        `SELECT event_id, label, amount, big::text AS big, ratio::text AS ratio, doc, raw::text AS raw,
           flag, tags FROM "${schema}".user_rows ORDER BY event_id`,
      );
      const stored = rows.map((r: Record<string, unknown>) => ({ ...r, event_id: undefined }));
      const label = (id: string) =>
        Number(id.slice(1)) % 2 === 1 ? '{"nested":[1,"two"]}' : '1e+21';
      const expected = (id: string) => ({
        event_id: undefined,
        label: label(id),
        amount: -1299,
        big: String(2n ** 62n),
        ratio: '0.0000001',
        doc: { currency: 'EUR', cents: 0 },
        raw: '["a",true,null]',
        flag: false,
        tags: ['red', 'green'],
      });
      expect(stored).toEqual(['E0001', 'E0002', 'E0003', 'E0004'].map(expected));
    });
  });
});
