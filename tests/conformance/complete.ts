/**
 * `complete`: every handler result recorded by one fenced write with no read in front
 * (on PostgreSQL, money effects alone are one statement that commits by itself). The SQL
 * `WHERE` is the only thing between a stale lease and the row: each must write nothing,
 * effect and the user's rows included, and come back as a lost lease saying why. Then a
 * handler's own completion (`{ write(tx), summary }`): its rows commit if and only if
 * the ACK commits; a throwing write fails only its message; a result is read once; and
 * a batch the database refuses is recorded one message at a time.
 */
import { describe, expect, test } from 'bun:test';
import {
  apply,
  type CompletionTx,
  enqueue,
  type Handler,
  LeaseLostError,
  PermanentFailure,
  type Store,
  show,
  work,
} from '@onceq/core';
import {
  type ClaimedLease,
  complete,
  effectResult,
  extendMany,
  type HandlerResult,
  ownCompletion,
  resultOf,
} from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { sql } from 'kysely';
import { type BackendFactory, batch, line, nEvents, paid } from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';
import { effectsOf, freshStore, handleAll, mustClaim, snapshot, type TestEnv } from './harness.ts';

const BOOK_EFFECT = { category: 'book', amountCents: 100 };
const BOOK: HandlerResult = effectResult(BOOK_EFFECT);
const TEMPORARY: HandlerResult = {
  failure: { kind: 'temporary', code: 'dependency_down', detail: 'try later' },
};

export function completeSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: every result, one fenced write (complete)`, () => {
    const env = freshStore(factory);

    /** E0001 claimed (generation 1, 2 s), recovered and re-claimed at 1002 (generation 2). */
    async function reclaimed(e: TestEnv): Promise<ClaimedLease> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(e.store, { leaseSeconds: 2 });
      e.clock.set(1002);
      expect((await mustClaim(e.store)).generation).toBe(2);
      return old;
    }

    for (const [label, result] of [
      ['an effect', BOOK],
      ['a failure', TEMPORARY],
    ] as const) {
      test(`${label} under a stale generation writes nothing and is reported lost`, async () => {
        const e = env();
        const stale = await reclaimed(e);
        const before = await snapshot(e.store);
        const { outcomes, lost } = await complete(e.store, [{ lease: stale, result }]);
        expect(outcomes).toEqual([]);
        expect(lost).toHaveLength(1);
        expect(lost[0]).toBeInstanceOf(LeaseLostError);
        expect(lost[0]?.message).toContain('a newer claim owns it');
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });

      test(`${label} at exactly lease_until writes nothing (the SQL fence, not the JavaScript one)`, async () => {
        const e = env();
        await enqueue(e.store, batch(line('E0001', paid('book', 100))));
        const lease = await mustClaim(e.store); // until 1030
        e.clock.set(1030);
        const before = await snapshot(e.store);
        const { lost } = await complete(e.store, [{ lease, result }]);
        expect(lost[0]?.message).toContain('the lease expired at 1030 (now 1030)');
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });
    }

    test('positive control: while the lease holds, the effect and the ACK are written together', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      const { outcomes, lost } = await complete(store, [{ lease, result: BOOK }]);
      expect(lost).toEqual([]);
      expect(outcomes).toEqual([{ eventId: 'E0001', outcome: 'done', effect: BOOK_EFFECT }]);
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 100 },
      ]);
      const { messages } = await snapshot(store);
      expect(messages.map((m) => [m.event_id, m.state])).toEqual([['E0001', 'done']]);
    });

    test('positive control: a temporary failure on attempt 1 is a retry after 1 s; on attempt 3 it is dead', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const first = await mustClaim(store);
      expect((await complete(store, [{ lease: first, result: TEMPORARY }])).outcomes).toEqual([
        {
          eventId: 'E0001',
          outcome: 'retry',
          code: 'dependency_down',
          detail: 'try later',
          availableAt: 1001,
        },
      ]);
      clock.set(1001);
      await complete(store, [{ lease: await mustClaim(store), result: TEMPORARY }]);
      clock.set(1003);
      const third = await mustClaim(store);
      expect(third.attempt).toBe(3);
      expect((await complete(store, [{ lease: third, result: TEMPORARY }])).outcomes).toMatchObject(
        [{ eventId: 'E0001', outcome: 'dead', code: 'dependency_down' }],
      );
    });

    test('one success: a stale generation writes nothing, an extended lease still commits', async () => {
      const e = env();
      const stale = await reclaimed(e);
      const before = await snapshot(e.store);
      const refused = await complete(e.store, [{ lease: stale, result: BOOK }]);
      expect(refused.outcomes).toEqual([]);
      expect(refused.lost[0]?.message).toContain('a newer claim owns it');
      expect(await snapshot(e.store)).toEqual(before);
      expect(await effectsOf(e.store)).toEqual([]);
      // The current holder's lease ran to 1032 at its claim; extended to 1062 at 1031, it
      // completes at 1040 although its claim said 1032: the fence is the row's.
      e.clock.set(1031);
      const [holder] = (await extendMany(e.store, [{ eventId: 'E0001', generation: 2 }], 31))
        .extended;
      expect(holder?.leaseUntil).toBe(1062);
      e.clock.set(1040);
      const settled = await complete(e.store, [
        { lease: { eventId: 'E0001', generation: 2, attempt: 2 }, result: BOOK },
      ]);
      expect(settled.lost).toEqual([]);
      expect(settled.outcomes).toMatchObject([{ eventId: 'E0001', outcome: 'done' }]);
      expect((await effectsOf(e.store)).map((x) => x.eventId)).toEqual(['E0001']);
    });

    test('work one message at a time (batch 1) counts, totals and refuses exactly like a batch', async () => {
      const { store } = env();
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 100)),
          line('E0002', paid('toy', 5)),
          line('E0003', paid('pen', 7)),
        ),
      );
      expect(await work(store, handlers.v1, { batch: 1 })).toEqual({
        claimed: 3,
        done: 2,
        retried: 0,
        dead: 1,
        lost: 0,
      });
      expect((await effectsOf(store)).map((x) => x.eventId)).toEqual(['E0001', 'E0003']);
    });

    test("a completion: its rows and the ACK commit together, with onceq's record (summary, no amount)", async () => {
      const { store } = env();
      await ledger(store);
      await enqueue(store, nEvents(1).jsonl);
      const lease = await mustClaim(store);
      const { outcomes, lost } = await handleAll(store, [lease], refund(-1299));
      expect(lost).toEqual([]);
      expect(outcomes).toEqual([
        { eventId: 'E0001', outcome: 'done', effect: null, summary: 'refund E0001' },
      ]);
      expect(await ledgerRows(store)).toEqual([['E0001', -1299]]);
      const view = await show(store, 'E0001');
      expect([view.state, view.effect, view.completion]).toEqual([
        'done',
        null,
        { summary: 'refund E0001' },
      ]);
      expect(await effectsOf(store)).toEqual([]);
    });

    test('a completion under a stale lease commits none of its rows: its write never runs', async () => {
      const e = env();
      await ledger(e.store);
      const stale = await reclaimed(e);
      const before = await snapshot(e.store);
      let ran = 0;
      const { outcomes, lost } = await complete(e.store, [
        {
          lease: stale,
          result: {
            completion: ownCompletion(
              [],
              async (tx: CompletionTx) => {
                ran++;
                await tx.query(insertSql(tx, e.store.schema), ['E0001', 5]);
              },
              null,
            ),
          },
        },
      ]);
      expect(outcomes).toEqual([]);
      expect(lost[0]?.message).toContain('a newer claim owns it');
      expect(ran).toBe(0);
      expect(await ledgerRows(e.store)).toEqual([]);
      expect(await snapshot(e.store)).toEqual(before);
    });

    test('a write that throws rolls back everything of its message and fails it: a branded failure keeps kind and code, anything else is a temporary handler_error', async () => {
      const { store } = env();
      await ledger(store);
      await enqueue(store, nEvents(2).jsonl);
      const leases = [await mustClaim(store), await mustClaim(store)];
      const handler: Handler = (_payload, context) => ({
        async write(tx) {
          await tx.query(insertSql(tx, context.store.schema), [context.eventId, 1]);
          if (context.eventId === 'E0001')
            throw new PermanentFailure('unknown_account', 'no such account');
          throw new Error('the ledger is locked');
        },
      });
      const { outcomes } = await handleAll(store, leases, handler);
      expect(outcomes).toEqual([
        { eventId: 'E0001', outcome: 'dead', code: 'unknown_account', detail: 'no such account' },
        {
          eventId: 'E0002',
          outcome: 'retry',
          code: 'handler_error',
          detail: 'the handler threw: the ledger is locked',
          availableAt: 1001,
        },
      ]);
      expect(await ledgerRows(store)).toEqual([]);
      expect((await show(store, 'E0001')).completion).toBeNull();
    });

    test('in a batch, a write that throws fails only its own message: the others commit their rows and effects', async () => {
      const { store } = env();
      await ledger(store);
      await enqueue(store, nEvents(4).jsonl);
      const leases = [];
      for (let i = 0; i < 4; i++) leases.push(await mustClaim(store));
      const handler: Handler = (payload, context) => {
        if (context.eventId === 'E0004') return handlers.v1(payload, context);
        return {
          async write(tx) {
            await tx.query(insertSql(tx, context.store.schema), [context.eventId, 0]);
            if (context.eventId === 'E0002') throw new Error('boom');
          },
          summary: `zero ${context.eventId}`,
        };
      };
      const { outcomes, lost } = await handleAll(store, leases, handler);
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'retry'],
        ['E0003', 'done'],
        ['E0004', 'done'],
      ]);
      expect(await ledgerRows(store)).toEqual([
        ['E0001', 0],
        ['E0003', 0],
      ]);
      expect((await effectsOf(store)).map((x) => x.eventId)).toEqual(['E0004']);
    });

    test('in a batch of completions, a stale lease among them runs no write; the others run once each, in order, and commit with their records', async () => {
      const e = env();
      await ledger(e.store);
      const stale = await reclaimed(e);
      await enqueue(e.store, batch(line('E0002', paid('pen', 5)), line('E0003', paid('bag', 7))));
      const fresh = [await mustClaim(e.store), await mustClaim(e.store)];
      const ran: string[] = [];
      const result = (eventId: string, amount: number): HandlerResult => ({
        completion: ownCompletion(
          [],
          async (tx: CompletionTx) => {
            ran.push(eventId);
            await tx.query(insertSql(tx, e.store.schema), [eventId, amount]);
          },
          `row ${eventId}`,
        ),
      });
      const { outcomes, lost } = await complete(e.store, [
        { lease: stale, result: result('E0001', 1) },
        ...fresh.map((lease, i) => ({ lease, result: result(lease.eventId, i + 2) })),
      ]);
      expect(lost.map((l) => l.eventId)).toEqual(['E0001']);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0002', 'done'],
        ['E0003', 'done'],
      ]);
      expect(ran).toEqual(['E0002', 'E0003']);
      expect(await ledgerRows(e.store)).toEqual([
        ['E0002', 2],
        ['E0003', 3],
      ]);
      expect((await show(e.store, 'E0003')).completion).toEqual({ summary: 'row E0003' });
      expect((await show(e.store, 'E0001')).completion).toBeNull();
    });

    test('a result is read once: a getter that answers differently on a second read cannot get one value checked and another stored', async () => {
      const { store } = env();
      await enqueue(store, nEvents(2).jsonl);
      const leases = [await mustClaim(store), await mustClaim(store)];
      const shifty = (first: number, then: number) => {
        let reads = 0;
        return {
          category: 'book',
          get amountCents() {
            reads++;
            return reads === 1 ? first : then;
          },
        };
      };
      const handler: Handler = (_payload, context) =>
        context.eventId === 'E0001' ? shifty(100, 0) : shifty(0, 100);
      const { outcomes } = await handleAll(store, leases, handler);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'dead'],
      ]);
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 100 },
      ]);
      expect((await show(store, 'E0002')).lastErrorCode).toBe('invalid_effect');
    });

    test("a completion's insert rows of a whole batch commit with their ACKs, other schemas included", async () => {
      const { store } = env();
      await ledger(store);
      const other = await otherSchemaTable(store);
      await enqueue(store, nEvents(3).jsonl);
      const leases = [await mustClaim(store), await mustClaim(store), await mustClaim(store)];
      const handler: Handler = (_payload, context) => ({
        insert: {
          [ledgerIn(context.store.schema)]: [{ event_id: context.eventId, amount: -1299 }],
          [other]: { event_id: context.eventId, note: { currency: 'EUR', big: 10n ** 12n > 0n } },
        },
        summary: `refund ${context.eventId}`,
      });
      const { outcomes, lost } = await handleAll(store, leases, handler);
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'done'],
        ['E0003', 'done'],
      ]);
      expect(await ledgerRows(store)).toEqual([
        ['E0001', -1299],
        ['E0002', -1299],
        ['E0003', -1299],
      ]);
      const { rows } = await rawDb(store, (db) =>
        sql<{ event_id: string; note: string }>`
          SELECT event_id, note FROM ${sql.raw(other)} ORDER BY event_id`.execute(db),
      );
      expect(rows.map((r) => [r.event_id, JSON.parse(r.note)])).toEqual(
        ['E0001', 'E0002', 'E0003'].map((id) => [id, { currency: 'EUR', big: true }]),
      );
      expect((await show(store, 'E0002')).completion).toEqual({ summary: 'refund E0002' });
    });

    test("a stale lease inserts none of its completion's rows; the fresh ones of the batch do", async () => {
      const e = env();
      await ledger(e.store);
      const stale = await reclaimed(e);
      await enqueue(e.store, batch(line('E0002', paid('pen', 5))));
      const fresh = await mustClaim(e.store);
      const row = (eventId: string): HandlerResult =>
        resultOf({ insert: { [ledgerIn(e.store.schema)]: { event_id: eventId, amount: 7 } } });
      const { outcomes, lost } = await complete(e.store, [
        { lease: stale, result: row('E0001') },
        { lease: fresh, result: row('E0002') },
      ]);
      expect(lost.map((l) => l.eventId)).toEqual(['E0001']);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([['E0002', 'done']]);
      expect(await ledgerRows(e.store)).toEqual([['E0002', 7]]);
    });

    test('in a batch, a row the database refuses fails only its own message (temporary write_failed): the others commit their rows', async () => {
      const { store } = env();
      await ledger(store);
      await rawDb(store, (db) =>
        sql`INSERT INTO user_ledger (event_id, amount) VALUES ('E0002', 1)`.execute(db),
      );
      await enqueue(store, nEvents(3).jsonl);
      const leases = [await mustClaim(store), await mustClaim(store), await mustClaim(store)];
      const handler: Handler = (_payload, context) => ({
        insert: { [ledgerIn(context.store.schema)]: { event_id: context.eventId, amount: -5 } },
      });
      const { outcomes, lost } = await handleAll(store, leases, handler);
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'retry'],
        ['E0003', 'done'],
      ]);
      const refused = await show(store, 'E0002');
      expect([refused.state, refused.lastErrorCode, refused.completion]).toEqual([
        'ready',
        'write_failed',
        null,
      ]);
      expect(refused.lastErrorDetail).toStartWith("the store refused this message's rows: ");
      expect(await ledgerRows(store)).toEqual([
        ['E0001', -5],
        ['E0002', 1],
        ['E0003', -5],
      ]);
    });

    test("a handler's context names its store: the backend and the schema of onceq's tables", async () => {
      const { store, schema } = env();
      await enqueue(store, nEvents(2).jsonl);
      const seen: unknown[] = [];
      const handler: Handler = (_payload, context) => {
        seen.push(context.store);
        return { category: 'book', amountCents: 1 };
      };
      expect(await work(store, handler, { batch: 1, max: 1 })).toMatchObject({ done: 1 });
      const lease = await mustClaim(store);
      await apply(store, lease, handler);
      const expected = { kind: store.kind, schema: schema ?? 'main' };
      expect(seen).toEqual([expected, expected]);
    });

    test("a completion's insert runs before its write, in the same transaction", async () => {
      const { store } = env();
      await ledger(store);
      await enqueue(store, nEvents(1).jsonl);
      const lease = await mustClaim(store);
      const handler: Handler = (_payload, context) => ({
        insert: { [ledgerIn(context.store.schema)]: { event_id: context.eventId, amount: 3 } },
        async write(tx) {
          const update =
            tx.kind === 'sqlite'
              ? `UPDATE ${ledgerIn(context.store.schema)} SET amount = amount * 2 WHERE event_id = ?`
              : `UPDATE ${ledgerIn(context.store.schema)} SET amount = amount * 2 WHERE event_id = $1`;
          const { rowCount } = await tx.query(update, [context.eventId]);
          if (rowCount !== 1) throw new Error('the inserted row is not there');
        },
      });
      const { outcomes } = await handleAll(store, [lease], handler);
      expect(outcomes.map((o) => o.outcome)).toEqual(['done']);
      expect(await ledgerRows(store)).toEqual([['E0001', 6]]);
    });

    test('a batch the database refuses is recorded one message at a time: each gets its own outcome and reason', async () => {
      const { store } = env();
      await refuseEffectOf(store, 'E0002');
      await enqueue(store, nEvents(3).jsonl);
      const leases = [await mustClaim(store), await mustClaim(store), await mustClaim(store)];
      const { outcomes, lost } = await handleAll(store, leases, handlers.v1);
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'done'],
        ['E0002', 'retry'],
        ['E0003', 'done'],
      ]);
      const refused = await show(store, 'E0002');
      expect([refused.state, refused.lastErrorCode]).toEqual(['ready', 'write_failed']);
      expect(refused.lastErrorDetail).toContain('refused by a trigger');
      expect((await effectsOf(store)).map((x) => x.eventId)).toEqual(['E0001', 'E0003']);
    });
  });
}

/** A table of the user's own: amounts of any sign, no CHECK of the store's. */
async function ledger(store: Store): Promise<void> {
  await rawDb(store, (db) =>
    sql`CREATE TABLE user_ledger (event_id TEXT PRIMARY KEY, amount INTEGER NOT NULL)`.execute(db),
  );
}

/**
 * A second table of the user's own outside the default place: another schema on
 * PostgreSQL (`shop.notes`), the file's own `main` on SQLite. Its name as `insert` takes it.
 */
async function otherSchemaTable(store: Store): Promise<string> {
  const name = store.kind === 'sqlite' ? 'main.notes' : 'shop.notes';
  await rawDb(store, async (db) => {
    if (store.kind === 'postgres') await sql`CREATE SCHEMA IF NOT EXISTS shop`.execute(db);
    await sql`DROP TABLE IF EXISTS ${sql.raw(name)}`.execute(db);
    await sql`CREATE TABLE ${sql.raw(name)} (event_id TEXT PRIMARY KEY, note TEXT NOT NULL)`.execute(
      db,
    );
  });
  return name;
}

/**
 * The user's table as a handler names it: in the test's store schema (PostgreSQL: a
 * schema per test; SQLite: `main`), qualified, since an unqualified name resolves by the
 * connection's search_path (public), not in the store's schema.
 */
function ledgerIn(schema: string): string {
  return `${schema}.user_ledger`;
}

function insertSql(tx: CompletionTx, schema: string): string {
  return tx.kind === 'sqlite'
    ? `INSERT INTO ${ledgerIn(schema)} (event_id, amount) VALUES (?, ?)`
    : `INSERT INTO ${ledgerIn(schema)} (event_id, amount) VALUES ($1, $2)`;
}

async function ledgerRows(store: Store): Promise<[string, number][]> {
  const { rows } = await rawDb(store, (db) =>
    sql<{ event_id: string; amount: number }>`
    SELECT event_id, amount FROM user_ledger ORDER BY event_id`.execute(db),
  );
  return rows.map((r) => [r.event_id, Number(r.amount)]);
}

/** A handler refunding `amount` into the user's ledger, in the ACK's transaction. */
function refund(amount: number): Handler {
  return (_payload, context) => ({
    async write(tx) {
      await tx.query(insertSql(tx, context.store.schema), [context.eventId, amount]);
    },
    summary: `refund ${context.eventId}`,
  });
}

/** A trigger that makes the database refuse the effect row of `eventId`. */
async function refuseEffectOf(store: Store, eventId: string): Promise<void> {
  await rawDb(store, async (db) => {
    if (store.kind === 'sqlite') {
      await sql
        .raw(`CREATE TRIGGER refuse_effect BEFORE INSERT ON effects
      WHEN NEW.event_id = '${eventId}' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END`)
        .execute(db);
      return;
    }
    await sql
      .raw(`CREATE FUNCTION refuse_effect() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.event_id = '${eventId}' THEN RAISE EXCEPTION 'refused by a trigger'; END IF;
    RETURN NEW; END $$`)
      .execute(db);
    await sql
      .raw(`CREATE TRIGGER refuse_effect BEFORE INSERT ON effects
    FOR EACH ROW EXECUTE FUNCTION refuse_effect()`)
      .execute(db);
  });
}
