/**
 * enqueue inside the caller's own transaction (the outbox pattern) and from event
 * objects, on both backends: the events exist if and only if the caller's transaction
 * commits, a rejected batch rolls back the caller's write when the error ends the
 * transaction (and never leaves any of its own rows behind), and objects store the same
 * canonical payload as their JSONL lines.
 */
import { describe, expect, test } from 'bun:test';
import {
  BatchRejectedError,
  type CallerTransaction,
  enqueue,
  JsonFloat,
  type Store,
  setIdPolicy,
  show,
  status,
  transaction,
} from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { forEachBackend } from '../support/backends.ts';
import {
  type BackendFactory,
  batch,
  line,
  type OpenedStore,
  paid,
  sqliteFactory,
  testClock,
} from '../support/factories.ts';
import { rejection } from './harness.ts';

/** The caller's own table, in the store's database: `orders(id)`. */
interface Caller {
  /** Runs `body` in a transaction of the caller's; commits when it resolves. */
  inTransaction<T>(
    body: (trx: CallerTransaction, insertOrder: (id: string) => Promise<void>) => Promise<T>,
  ): Promise<T>;
  orders(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Whose transaction the caller passes: `transaction(store, …)`'s on the store's own
 * connection (both backends), or (PostgreSQL) one on a connection of its own, through
 * Kysely or the driver.
 */
type CallerKind = 'store' | 'kysely' | 'driver';

/** The caller's orders table, as its statements name it (PostgreSQL: in the test's schema). */
function ordersTable(opened: OpenedStore): string {
  return opened.schema === undefined ? 'orders' : `"${opened.schema}".orders`;
}

/** A caller whose transactions are `transaction(store, …)`: its rows written through `tx`. */
async function storeCaller(opened: OpenedStore): Promise<Caller> {
  const { store } = opened;
  const table = ordersTable(opened);
  const $ = (n: number) => (store.kind === 'sqlite' ? `?${n}` : `$${n}`);
  await transaction(store, (tx) => tx.query(`CREATE TABLE ${table} (id TEXT PRIMARY KEY)`));
  return {
    inTransaction: (body) =>
      transaction(store, (tx) =>
        body(tx, async (id) => {
          await tx.query(`INSERT INTO ${table} (id) VALUES (${$(1)})`, [id]);
        }),
      ),
    orders: () =>
      transaction(store, async (tx) =>
        (await tx.query(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => String(r.id)),
      ),
    close: async () => {},
  };
}

/** A caller with its own connection to the store's database, through Kysely or the driver. */
async function openCaller(opened: OpenedStore, kind: CallerKind): Promise<Caller> {
  if (kind === 'store') return storeCaller(opened);
  const table = ordersTable(opened);
  if (opened.schema === undefined) throw new Error('a SQLite caller uses transaction(store, …)');
  // PostgreSQL: the caller's table in the test's schema, named qualified; the caller's
  // connections keep their default search_path.
  const pool = new pg.Pool({ connectionString: opened.target, max: 2 });
  await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY)`);
  const orders = async () =>
    (await pool.query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);
  if (kind === 'driver') {
    return {
      async inTransaction(body) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const before = (await client.query('SHOW search_path')).rows[0];
          const result = await body(client, async (id) => {
            await client.query(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
          });
          // onceq pointed search_path at its schema only for its own statements.
          expect((await client.query('SHOW search_path')).rows[0]).toEqual(before);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      orders,
      close: () => pool.end(),
    };
  }
  // biome-ignore lint/suspicious/noExplicitAny: the caller's schema is its own.
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  return {
    inTransaction: (body) =>
      db.transaction().execute((trx) =>
        body(trx, async (id) => {
          await sql`INSERT INTO ${sql.raw(table)} (id) VALUES (${id})`.execute(trx);
        }),
      ),
    orders,
    close: () => db.destroy(),
  };
}

async function withCaller(
  factory: BackendFactory,
  kind: CallerKind,
  body: (store: Store, caller: Caller) => Promise<void>,
): Promise<void> {
  const opened = await factory.open(testClock());
  try {
    const caller = await openCaller(opened, kind);
    try {
      await body(opened.store, caller);
    } finally {
      await caller.close();
    }
  } finally {
    await opened.cleanup();
  }
}

const BOOK = paid('book', 100);

function enqueueInTransaction(factory: BackendFactory, kind: CallerKind) {
  const label = {
    store: 'transaction(store, …)',
    kysely: 'a Kysely transaction',
    driver: "the driver's own transaction",
  }[kind];
  describe(`${factory.name}: enqueue in ${label}`, () => {
    test('commits with the caller: its row and the events, together', async () => {
      await withCaller(factory, kind, async (store, caller) => {
        const result = await caller.inTransaction(async (trx, insertOrder) => {
          await insertOrder('o-1');
          return enqueue(store, [{ eventId: 'E0001', payload: BOOK }], { transaction: trx });
        });
        expect(result).toEqual({ accepted: 1, duplicates: 0 });
        expect(await caller.orders()).toEqual(['o-1']);
        expect((await show(store, 'E0001')).state).toBe('ready');
      });
    });

    test("a rollback of the caller's transaction leaves no message", async () => {
      await withCaller(factory, kind, async (store, caller) => {
        const refusal = new Error('the caller changed its mind');
        const thrown = await caller
          .inTransaction(async (trx, insertOrder) => {
            await insertOrder('o-1');
            await enqueue(store, batch(line('E0001', BOOK), line('E0002', BOOK)), {
              transaction: trx,
            });
            throw refusal;
          })
          .catch((error) => error);
        expect(thrown).toBe(refusal);
        expect(await caller.orders()).toEqual([]);
        expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 0, dead: 0 });
      });
    });

    test("a conflict rejects the batch and rolls back the caller's write", async () => {
      await withCaller(factory, kind, async (store, caller) => {
        await enqueue(store, batch(line('E0001', BOOK)));
        const error = await rejection(
          caller.inTransaction(async (trx, insertOrder) => {
            await insertOrder('o-1');
            return enqueue(
              store,
              [
                { eventId: 'E0002', payload: BOOK },
                { eventId: 'E0001', payload: paid('book', 999) },
              ],
              { transaction: trx },
            );
          }),
          BatchRejectedError,
        );
        expect(error.message).toContain(
          'event 2: event_id E0001 is already stored with a different payload',
        );
        expect(await caller.orders()).toEqual([]);
        expect((await status(store)).messages.ready).toBe(1);
        expect((await show(store, 'E0001')).payloadText).toBe(
          '{"amount_cents":100,"category":"book"}',
        );
      });
    });

    test("the id policy is the one the caller's transaction reads, not the last one this process saw", async () => {
      await withCaller(factory, kind, async (store, caller) => {
        await caller.inTransaction((trx) =>
          enqueue(store, [{ eventId: 'E0001', payload: BOOK }], { transaction: trx }),
        );
        await setIdPolicy(store, GENERAL_POLICY);
        const result = await caller.inTransaction(async (trx, insertOrder) => {
          await insertOrder('o-1');
          return enqueue(store, [{ eventId: 'order-1', payload: BOOK }], { transaction: trx });
        });
        expect(result).toEqual({ accepted: 1, duplicates: 0 });
        expect((await show(store, 'order-1')).state).toBe('ready');
      });
    });

    test("a rejection names an id the store's policy refuses beside a line of broken JSON", async () => {
      await withCaller(factory, kind, async (store, caller) => {
        const error = await rejection(
          caller.inTransaction((trx) =>
            enqueue(store, batch(line('E0001', BOOK), line('E0262:', BOOK), '{broken'), {
              transaction: trx,
            }),
          ),
          BatchRejectedError,
        );
        expect(error.issues.map((issue) => issue.line)).toEqual([2, 3]);
        expect(error.message).toContain('line 2: event_id "E0262:" must match');
        expect((await status(store)).messages.ready).toBe(0);
      });
    });

    test('a caller that catches the rejection and commits keeps its own row and none of the batch', async () => {
      await withCaller(factory, kind, async (store, caller) => {
        await enqueue(store, batch(line('E0001', BOOK)));
        await caller.inTransaction(async (trx, insertOrder) => {
          await insertOrder('o-1');
          const refused = await enqueue(
            store,
            batch(line('E0002', BOOK), line('E0001', paid('pen', 5))),
            { transaction: trx },
          ).catch((e) => e);
          expect(refused).toBeInstanceOf(BatchRejectedError);
          await insertOrder('o-2');
        });
        expect(await caller.orders()).toEqual(['o-1', 'o-2']);
        expect((await status(store)).messages.ready).toBe(1);
        await rejection(show(store, 'E0002'), Error);
      });
    });
  });
}

function eventObjects(factory: BackendFactory) {
  describe(`${factory.name}: enqueue from event objects`, () => {
    test('objects and bytes store the same canonical payload, and dedupe against each other', async () => {
      await withCaller(factory, 'store', async (store) => {
        const text =
          '{ "b": 1, "a": [1.5, 10000.0, "x", {"z": null, "y": true}], "n": 12345678901234567890 }';
        expect(await enqueue(store, batch(line('E0001', text)))).toEqual({
          accepted: 1,
          duplicates: 0,
        });
        const object = {
          n: 12345678901234567890n,
          a: [1.5, new JsonFloat(10000), 'x', { y: true, z: null }],
          b: 1,
        };
        expect(await enqueue(store, [{ eventId: 'E0002', payload: object }])).toEqual({
          accepted: 1,
          duplicates: 0,
        });
        const stored = (await show(store, 'E0001')).payloadText;
        expect(stored).toBe(
          '{"a":[1.5,10000.0,"x",{"y":true,"z":null}],"b":1,"n":12345678901234567890}',
        );
        expect((await show(store, 'E0002')).payloadText).toBe(stored);
        // The object form of E0001 is a duplicate of its line, not a conflict.
        expect(await enqueue(store, [{ eventId: 'E0001', payload: object }])).toEqual({
          accepted: 0,
          duplicates: 1,
        });
        // A JS number 10000 is an integer: not the stored 10000.0.
        const conflict = await rejection(
          enqueue(store, [
            {
              eventId: 'E0001',
              payload: { ...object, a: [1.5, 10000, 'x', { y: true, z: null }] },
            },
          ]),
          BatchRejectedError,
        );
        expect(conflict.message).toBe(
          'event rejected, nothing was written: event_id E0001 is already stored with a different payload (a correction needs a new event id)',
        );
      });
    });

    test('a bad event rejects them all, naming each by its position; nothing is written', async () => {
      await withCaller(factory, 'store', async (store) => {
        const error = await rejection(
          enqueue(store, [
            { eventId: 'E0001', payload: BOOK },
            { eventId: 'E0002', payload: { price: Number.NaN } },
            { eventId: 'E0003', payload: { when: new Date(0) } },
            { eventId: 'nope', payload: BOOK },
            { eventId: 'E0005', payload: BOOK, extra: 1 } as never,
            { eventId: 'E0001', payload: paid('pen', 1) },
          ]),
          BatchRejectedError,
        );
        expect(error.issues.map((i) => i.line)).toEqual([2, 3, 4, 5, 6]);
        expect(error.message).toStartWith(
          'batch rejected, nothing was written: event 2: payload field price is NaN',
        );
        expect(error.message).toContain('event 3: payload field when is a Date, not a JSON value');
        expect(error.message).toContain('event 5: unexpected key "extra"');
        expect(error.message).toContain('event 6: event_id E0001 conflicts with event 1');
        expect((await status(store)).messages.ready).toBe(0);
      });
    });

    test('a single bad event is said of the event, not of a batch position', async () => {
      await withCaller(factory, 'store', async (store) => {
        for (const [event, reason] of [
          [{ eventId: 'E0001', payload: { price: Number.NaN } }, 'payload field price is NaN'],
          [{ eventId: 'E12', payload: BOOK }, 'event_id "E12" must match'],
        ] as const) {
          const error = await rejection(enqueue(store, [event]), BatchRejectedError);
          expect(error.message).toStartWith(`event rejected, nothing was written: ${reason}`);
          expect(error.message).not.toContain('event 1');
          expect(error.issues.map((i) => i.line)).toEqual([1]);
        }
        expect((await status(store)).messages.ready).toBe(0);
      });
    });
  });
}

function concurrentRequests(factory: BackendFactory) {
  describe(`${factory.name}: transaction(store, …) under concurrent requests`, () => {
    test('64 concurrent requests to a Bun.serve endpoint: each commits its order with its event, and one that fails rolls back only its own', async () => {
      await withCaller(factory, 'store', async (store, caller) => {
        const idOf = (n: number) => `E${String(n).padStart(4, '0')}`;
        const refused = (n: number) => n % 8 === 0;
        const server = Bun.serve({
          hostname: '127.0.0.1',
          port: 0,
          reusePort: false,
          development: false,
          async fetch(request) {
            const n = Number(new URL(request.url).searchParams.get('n'));
            try {
              await caller.inTransaction(async (tx, insertOrder) => {
                await insertOrder(`o-${idOf(n)}`);
                // Another request's turn may come here (an await in a real handler).
                await new Promise((resolve) => setImmediate(resolve));
                await enqueue(store, [{ eventId: idOf(n), payload: BOOK }], { transaction: tx });
                if (refused(n)) throw new Error(`request ${n} refused after its enqueue`);
              });
              return new Response('ok');
            } catch (error) {
              return new Response((error as Error).message, { status: 409 });
            }
          },
          error: () => new Response('error', { status: 500 }),
        });
        try {
          const numbers = Array.from({ length: 64 }, (_, i) => i + 1);
          const answers = await Promise.all(
            numbers.map(async (n) => {
              const response = await fetch(`http://127.0.0.1:${server.port}/?n=${n}`);
              return `${n} ${response.status} ${await response.text()}`;
            }),
          );
          expect(answers).toEqual(
            numbers.map((n) =>
              refused(n) ? `${n} 409 request ${n} refused after its enqueue` : `${n} 200 ok`,
            ),
          );
        } finally {
          server.stop(true);
        }
        const kept = Array.from({ length: 64 }, (_, i) => i + 1).filter((n) => !refused(n));
        expect(await caller.orders()).toEqual(kept.map((n) => `o-${idOf(n)}`));
        expect((await status(store)).messages).toEqual({
          ready: kept.length,
          leased: 0,
          done: 0,
          dead: 0,
        });
        for (const n of kept) expect((await show(store, idOf(n))).state).toBe('ready');
        await rejection(show(store, idOf(8)), Error);
      });
    });

    test('tx is valid only while the function runs: afterwards its queries and an enqueue through it are refused', async () => {
      await withCaller(factory, 'store', async (store) => {
        const kept = await transaction(store, async (tx) => tx);
        await rejection(kept.query('SELECT 1'), Error);
        await rejection(
          enqueue(store, [{ eventId: 'E0001', payload: BOOK }], { transaction: kept }),
          Error,
        );
        expect((await status(store)).messages.ready).toBe(0);
      });
    });
  });
}

function sqliteRefusals() {
  describe('sqlite: a transaction on another connection to the file', () => {
    test('a bun:sqlite Database or a Kysely transaction is refused with a TypeError naming transaction(store, …); nothing is written', async () => {
      await withCaller(sqliteFactory, 'store', async (store) => {
        const { Database } = await import('bun:sqlite');
        const { SqliteDialect } = await import('kysely');
        const raw = new Database(store.location);
        // biome-ignore lint/suspicious/noExplicitAny: the caller's schema is its own.
        const db = new Kysely<any>({
          dialect: new SqliteDialect({
            database: {
              prepare: (text: string) => raw.query(text),
              close: () => raw.close(),
            } as never,
          }),
        });
        try {
          raw.run('BEGIN');
          const byDriver = await rejection(
            enqueue(store, [{ eventId: 'E0001', payload: BOOK }], { transaction: raw as never }),
            TypeError,
          );
          raw.run('ROLLBACK');
          expect(byDriver.message).toContain('transaction(store, async (tx) =>');
          const byKysely = await rejection(
            db
              .transaction()
              .execute((trx) =>
                enqueue(store, [{ eventId: 'E0001', payload: BOOK }], { transaction: trx }),
              ),
            TypeError,
          );
          expect(byKysely.message).toContain('transaction(store, async (tx) =>');
          expect((await status(store)).messages.ready).toBe(0);
        } finally {
          await db.destroy();
          raw.close();
        }
      });
    });
  });
}

forEachBackend('enqueue in the caller transaction', (factory) => {
  enqueueInTransaction(factory, 'store');
  if (factory.name === 'postgres') {
    enqueueInTransaction(factory, 'kysely');
    enqueueInTransaction(factory, 'driver');
  }
  eventObjects(factory);
  concurrentRequests(factory);
});

sqliteRefusals();
