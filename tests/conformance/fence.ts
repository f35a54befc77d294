/**
 * The fence in SQL, statement by statement. Every test here calls a fenced statement of
 * the backend's statements module (`store.driver`) **directly**, bypassing the JavaScript
 * checks of apply/fail/redrive, so that each SQL predicate is the only thing between a
 * stale worker and the row: a stale generation, a lease at exactly `lease_until`, a wrong
 * state, and a message recovered (and re-claimed) in between. Each must change zero rows
 * and insert no row. A positive control per statement shows the same call does write
 * when the lease holds, so a zero can never come from a broken call.
 *
 * The result template (`Driver.complete`) is the one way a message moves `leased → done`
 * on each backend; each of its shapes is here: the money effect's rows, a completion's
 * own rows, a `write(tx)` (the explicit transaction), a failure, and the trailing claim.
 *
 * `bun scripts/fence-mutations.ts` deletes each predicate in turn and names the tests that fail.
 */
import { describe, expect, test } from 'bun:test';
import {
  apply,
  enqueue,
  type Handler,
  LeaseLostError,
  type LeaseRef,
  OnceqError,
} from '@onceq/core';
import {
  afterFailure,
  type CompleteOptions,
  type CompletionWrite,
  checkRows,
  effectResult,
  ownCompletion,
} from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { sql } from 'kysely';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';
import { effectsOf, freshStore, mustClaim, rejection, snapshot, type TestEnv } from './harness.ts';

const EFFECT = { category: 'book', amountCents: 100 };

/** The driver's completion write, committed on its own at `now`; the rows it wrote. */
async function completeAt(
  e: TestEnv,
  writes: readonly CompletionWrite[],
  now: number,
  options: CompleteOptions = {},
) {
  e.clock.set(now);
  return (await e.store.driver.complete(e.store, writes, options)).written;
}

const failed = () => {
  throw new Error('the completion was not expected to fail');
};

/** The ACK with its money effect, as the worker writes it. */
function ackWithEffect(e: TestEnv, leases: readonly LeaseRef[], now: number) {
  return completeAt(
    e,
    leases.map((lease) => ({ lease, ...effectResult(EFFECT), failed })),
    now,
  );
}

/** {@link ackWithEffect} with the template's trailing claim of one more message. */
function ackWithEffectAndClaim(e: TestEnv, leases: readonly LeaseRef[], now: number) {
  return completeAt(
    e,
    leases.map((lease) => ({ lease, ...effectResult(EFFECT), failed })),
    now,
    {
      claimNext: { limit: 1, leaseSeconds: 30, maxAttempts: 5, queue: 'default', onDead: 'block' },
    },
  );
}

/** The ACK with a user completion whose `write(tx)` writes nothing (onceq's record only). */
function ackWithCompletion(e: TestEnv, lease: LeaseRef, now: number) {
  return completeAt(
    e,
    [{ lease, completion: ownCompletion([], () => {}, 'fence test'), failed }],
    now,
  );
}

/** A table of the user's own for {@link ackWithRows}. */
async function userRowsTable(e: TestEnv): Promise<void> {
  await rawDb(e.store, (db) =>
    sql`CREATE TABLE IF NOT EXISTS user_rows (event_id TEXT PRIMARY KEY)`.execute(db),
  );
}

/** The user's rows {@link ackWithRows} wrote. */
async function userRows(e: TestEnv): Promise<string[]> {
  const { rows } = await rawDb(e.store, (db) =>
    sql<{ event_id: string }>`SELECT event_id FROM user_rows ORDER BY event_id`.execute(db),
  );
  return rows.map((r) => r.event_id);
}

/**
 * The ACK with a completion declaring one `insert` row of the user's own, as a worker
 * writes it (on PostgreSQL one statement: ACKs, records and rows).
 */
function ackWithRows(e: TestEnv, leases: readonly LeaseRef[], now: number) {
  return completeAt(
    e,
    leases.map((lease) => {
      // Qualified: an unqualified name resolves by the connection's search_path.
      const checked = checkRows({ [`${e.store.schema}.user_rows`]: { event_id: lease.eventId } });
      if (!('groups' in checked)) throw new Error(checked.violation);
      return { lease, completion: ownCompletion(checked.groups, null, 'fence test'), failed };
    }),
    now,
  );
}

/** The fail write (temporary failure on attempt 1). */
function failAt(e: TestEnv, lease: LeaseRef, now: number) {
  const failure = { kind: 'temporary' as const, code: 'test', detail: 'fence test' };
  return completeAt(
    e,
    [{ lease, failure: (at: number) => afterFailure(e.store.protocol, 1, failure, at) }],
    now,
  );
}

/** The stale worker's view: what it would pass to a fenced statement. */
type Scenario = { stale: LeaseRef; now: number; what: string };

export function fenceSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: the fence in SQL, statement by statement`, () => {
    const env = freshStore(factory);

    /** E0001 claimed (generation 1, lease 2 s), then at 1002 recovered and re-claimed (generation 2). */
    async function reclaimed(e: TestEnv): Promise<Scenario> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(e.store, { leaseSeconds: 2 });
      e.clock.set(1002);
      const current = await mustClaim(e.store);
      expect([current.eventId, current.generation]).toEqual(['E0001', 2]);
      return { stale: { eventId: 'E0001', generation: old.generation }, now: 1002, what: 'stale' };
    }

    /** E0001 leased at generation 1 until 1030; the call comes at exactly 1030. */
    async function expiredAtBoundary(e: TestEnv): Promise<Scenario> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(e.store);
      expect(lease.leaseUntil).toBe(1030);
      return { stale: lease, now: lease.leaseUntil, what: 'expired' };
    }

    /**
     * E0001 leased at generation 1 until 1030, then forged to `done` with its lease kept
     * (a row no transition writes): only `state = 'leased'` tells it apart.
     */
    async function wrongState(e: TestEnv): Promise<Scenario> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(e.store);
      await e.forgeState('E0001', 'done');
      return { stale: lease, now: 1001, what: 'wrong state' };
    }

    /**
     * E0001 claimed with a 2 s lease; at 1002 a claim recovers it to `ready` (generation 1
     * kept) while leasing E0002, which ranks first. The old worker's lease names a
     * generation that still matches, but the message is no longer leased.
     */
    async function recoveredNotReclaimed(e: TestEnv): Promise<Scenario> {
      await enqueue(e.store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(e.store, { leaseSeconds: 2 });
      e.clock.set(1001);
      await enqueue(e.store, batch(line('E0002', paid('pen', 200))));
      e.clock.set(1002);
      const next = await mustClaim(e.store);
      expect(next.eventId).toBe('E0002');
      return { stale: old, now: 1002, what: 'recovered' };
    }

    const scenarios: [string, (e: TestEnv) => Promise<Scenario>][] = [
      ['a stale generation (recovered and re-claimed in between)', reclaimed],
      ['a lease at exactly lease_until', expiredAtBoundary],
      ['a row that is not leased although it still carries a lease', wrongState],
      ['a message recovered to ready (same generation, no lease)', recoveredNotReclaimed],
    ];

    for (const [label, setUp] of scenarios) {
      test(`ACK with its effect: ${label} changes no row and inserts no effect`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect((await ackWithEffect(e, [stale], now)).size).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });

      test(`ACK with a completion: ${label} changes no row and records nothing`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect((await ackWithCompletion(e, stale, now)).size).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
        expect(
          await rawDb(e.store, (db) => db.selectFrom('completions').selectAll().execute()),
        ).toEqual([]);
      });

      test(`ACK with insert rows: ${label} changes no row, records nothing, inserts no row`, async () => {
        const e = env();
        await userRowsTable(e);
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect((await ackWithRows(e, [stale], now)).size).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
        expect(
          await rawDb(e.store, (db) => db.selectFrom('completions').selectAll().execute()),
        ).toEqual([]);
        expect(await userRows(e)).toEqual([]);
      });

      test(`ACK with its effect and the trailing claim: ${label} marks nothing done and inserts no effect`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect((await ackWithEffectAndClaim(e, [stale], now)).size).toBe(0);
        // The claim may recover or lease the message; it never marks it done.
        const after = await snapshot(e.store);
        const done = (s: typeof before) =>
          s.messages.filter((m) => m.state === 'done').map((m) => m.event_id);
        expect(done(after)).toEqual(done(before));
        expect(await effectsOf(e.store)).toEqual([]);
      });

      test(`fail: ${label} changes no row`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect((await failAt(e, stale, now)).size).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
      });
    }

    test('positive control: the same direct calls write when the lease holds (one second before lease_until)', async () => {
      const e = env();
      const { store } = e;
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 100)),
          line('E0002', paid('pen', 1)),
          line('E0003', paid('bag', 1)),
        ),
      );
      const first = await mustClaim(store);
      const second = await mustClaim(store);
      const third = await mustClaim(store);
      expect([...(await ackWithEffect(e, [first], first.leaseUntil - 1))]).toEqual([
        ['E0001', null],
      ]);
      expect(await failAt(e, second, second.leaseUntil - 1)).toEqual(
        new Map([
          ['E0002', expect.objectContaining({ state: 'ready', availableAt: second.leaseUntil })],
        ]),
      );
      expect((await ackWithCompletion(e, third, third.leaseUntil - 1)).get('E0003')).toBeNull();
      expect(await effectsOf(store)).toEqual([{ eventId: 'E0001', ...EFFECT }]);
      // The trailing claim's ACK writes too, and claims the next message.
      await enqueue(store, batch(line('E0004', paid('toy', 1)), line('E0005', paid('map', 1))));
      const fourth = await mustClaim(store);
      const report = await store.driver.complete(
        store,
        [{ lease: fourth, ...effectResult(EFFECT), failed }],
        {
          claimNext: {
            limit: 1,
            leaseSeconds: 30,
            maxAttempts: 5,
            queue: 'default',
            onDead: 'block',
          },
        },
      );
      expect([...report.written]).toEqual([['E0004', null]]);
      expect(report.claimed?.map((row) => row.event_id)).toEqual(['E0005']);
      const recorded = await rawDb(store, (db) =>
        db.selectFrom('completions').select(['event_id', 'summary']).execute(),
      );
      expect(recorded).toEqual([{ event_id: 'E0003', summary: 'fence test' }]);
    });

    test('ACK of a batch with insert rows: only messages whose lease holds are done, with their records and rows', async () => {
      const e = env();
      await userRowsTable(e);
      const { stale } = await reclaimed(e); // E0001: generation 2 holds, 1 is stale
      await enqueue(e.store, batch(line('E0002', paid('pen', 200))));
      const valid = await mustClaim(e.store);
      expect([...(await ackWithRows(e, [stale, valid], 1003))]).toEqual([['E0002', null]]);
      const { messages } = await snapshot(e.store);
      expect(messages.map((m) => [m.event_id, m.state, m.generation])).toEqual([
        ['E0001', 'leased', 2],
        ['E0002', 'done', 1],
      ]);
      const recorded = await rawDb(e.store, (db) =>
        db.selectFrom('completions').select('event_id').execute(),
      );
      expect(recorded).toEqual([{ event_id: 'E0002' }]);
      expect(await userRows(e)).toEqual(['E0002']);
    });

    test('ACK of a batch: only the rows whose lease holds are marked done (and get an effect)', async () => {
      const e = env();
      const { stale } = await reclaimed(e); // E0001: generation 2 holds, 1 is stale
      await enqueue(e.store, batch(line('E0002', paid('pen', 200))));
      const valid = await mustClaim(e.store);
      expect(valid.eventId).toBe('E0002');
      expect([...(await ackWithEffect(e, [stale, valid], 1003)).keys()]).toEqual(['E0002']);
      const { messages } = await snapshot(e.store);
      expect(messages.map((m) => [m.event_id, m.state, m.generation])).toEqual([
        ['E0001', 'leased', 2],
        ['E0002', 'done', 1],
      ]);
      expect((await effectsOf(e.store)).map((x) => x.eventId)).toEqual(['E0002']);
    });

    test('redrive statement: only dead rows move; ready, leased and done rows named by id stay as they are', async () => {
      const { store } = env();
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 100)),
          line('E0002', paid('pen', 200)),
          line('E0003', paid('toy', 300)),
          line('E0004', paid('bag', 400)),
        ),
      );
      await apply(store, await mustClaim(store), handlers.v1); // E0001 done
      await mustClaim(store); // E0002 leased
      await apply(store, await mustClaim(store), handlers.v1); // E0003 dead: v1 refuses a toy
      const before = await snapshot(store);
      const all = ['E0001', 'E0002', 'E0003', 'E0004'];
      const moved = await store.transact((x) => store.driver.redrive(x, all, 1001));
      expect(moved).toEqual(['E0003']);
      const after = await snapshot(store);
      for (const id of ['E0001', 'E0002', 'E0004']) {
        expect(after.messages.find((m) => m.event_id === id)).toEqual(
          before.messages.find((m) => m.event_id === id),
        );
      }
      expect(after.messages.find((m) => m.event_id === 'E0003')).toMatchObject({
        state: 'ready',
        attempts: 0,
      });
    });

    test('apply: a lease taken over while the handler ran is lost (LeaseLostError, exit 4, why read after the fact) and writes nothing', async () => {
      const e = env();
      const { store } = e;
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store, { leaseSeconds: 2 });
      // The handler runs outside any transaction: meanwhile the lease runs out and another
      // claim takes the message, so the fenced write must find nothing to ACK.
      const slow: Handler = async (payload, context) => {
        e.clock.set(1002);
        await mustClaim(store);
        return handlers.v1(payload, context);
      };
      const error = await rejection(apply(store, lease, slow), LeaseLostError);
      expect(error).toBeInstanceOf(OnceqError);
      expect([error.code, error.exitCode, error.eventId]).toEqual(['lease_lost', 4, 'E0001']);
      expect(error.message).toContain('generation 2');
      const { messages } = await snapshot(store);
      expect(messages.map((m) => [m.event_id, m.state, m.generation])).toEqual([
        ['E0001', 'leased', 2],
      ]);
      expect(await effectsOf(store)).toEqual([]);
    });
  });
}
