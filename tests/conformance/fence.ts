/**
 * The fence in SQL, statement by statement. Every test here calls a fenced statement of
 * the backend's statements module (`store.statements`) **directly**, inside `store.transact`, bypassing the JavaScript checks
 * of apply/fail/redrive, so that each SQL predicate is the only thing between a stale
 * worker and the row: a stale generation, a lease at exactly `lease_until`, a wrong
 * state, and a message recovered (and re-claimed) in between. Each must change zero rows
 * and insert no effect. A positive control per statement shows the same call does write
 * when the lease holds, so a zero can never come from a broken call.
 *
 * `bun scripts/fence-mutations.ts` deletes each predicate in turn and names the tests that fail.
 */
import { describe, expect, test } from 'bun:test';
import { apply, enqueue, LeaseLostError, OnceqError, type Store } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { defineStatement, type Executor } from '../../packages/core/src/driver/prepared.ts';
import { SqliteExecutor, type SqlText } from '../../packages/core/src/driver/sqlite/executor.ts';
import type { LeaseRef } from '../../packages/core/src/internal.ts';
import { recordFailure } from '../../packages/core/src/queue/fail.ts';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { effectsOf, freshStore, mustClaim, rejection, snapshot, type TestEnv } from './harness.ts';

const EFFECT = { category: 'book', amountCents: 100 };

/** The plain ACK statement (the one SQLite's apply runs), committed on its own. */
function ackDirect(store: Store, leases: readonly LeaseRef[], now: number): Promise<number> {
  return store.transact((x) => store.statements.ack(x, leases, now));
}

/**
 * The ACK the backend's apply uses, with its effects: PostgreSQL's one statement that
 * inserts the effects of the rows it marks done; elsewhere the plain ACK.
 */
function ackAsApplyDoes(store: Store, leases: readonly LeaseRef[], now: number): Promise<number> {
  return store.transact((x) =>
    store.kind === 'postgres'
      ? store.statements.ackWithEffects(
          x,
          leases.map((lease) => ({ lease, effect: EFFECT })),
          now,
          () => now,
        )
      : store.statements.ack(x, leases, now),
  );
}

/** The fail statement (temporary failure), committed on its own. */
function failDirect(store: Store, lease: LeaseRef, now: number) {
  return store.transact((x) =>
    recordFailure(
      store,
      x,
      lease,
      1,
      { kind: 'temporary', code: 'test', detail: 'fence test' },
      now,
    ),
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
      test(`ACK (plain statement): ${label} changes no row`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect(await ackDirect(e.store, [stale], now)).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
      });

      test(`ACK with its effects (as apply runs it): ${label} changes no row and inserts no effect`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        expect(await ackAsApplyDoes(e.store, [stale], now)).toBe(0);
        expect(await snapshot(e.store)).toEqual(before);
        expect(await effectsOf(e.store)).toEqual([]);
      });

      test(`fail: ${label} changes no row and throws LeaseLostError`, async () => {
        const e = env();
        const { stale, now } = await setUp(e);
        const before = await snapshot(e.store);
        const error = await rejection(failDirect(e.store, stale, now), LeaseLostError);
        expect([error.code, error.exitCode]).toEqual(['lease_lost', 4]);
        expect(await snapshot(e.store)).toEqual(before);
      });
    }

    test('positive control: the same direct calls write when the lease holds (one second before lease_until)', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 1))));
      const first = await mustClaim(store);
      const second = await mustClaim(store);
      expect(await ackAsApplyDoes(store, [first], first.leaseUntil - 1)).toBe(1);
      expect(await failDirect(store, second, second.leaseUntil - 1)).toEqual({
        state: 'ready',
        availableAt: second.leaseUntil - 1 + 1,
      });
      const effects = await effectsOf(store);
      expect(effects).toEqual(store.kind === 'postgres' ? [{ eventId: 'E0001', ...EFFECT }] : []);
    });

    test('ACK of a batch: only the rows whose lease holds are marked done (and get an effect)', async () => {
      const e = env();
      const { stale } = await reclaimed(e); // E0001: generation 2 holds, 1 is stale
      await enqueue(e.store, batch(line('E0002', paid('pen', 200))));
      const valid = await mustClaim(e.store);
      expect(valid.eventId).toBe('E0002');
      expect(await ackAsApplyDoes(e.store, [stale, valid], 1003)).toBe(1);
      const { messages } = await snapshot(e.store);
      expect(messages.map((m) => [m.event_id, m.state, m.generation])).toEqual([
        ['E0001', 'leased', 2],
        ['E0002', 'done', 1],
      ]);
      if (e.store.kind === 'postgres') {
        expect((await effectsOf(e.store)).map((x) => x.eventId)).toEqual(['E0002']);
      }
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
      const moved = await store.transact((x) => store.statements.redrive(x, all, 1001));
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

    test('apply: when the SQL ACK matches no row although the JavaScript fence passed, it throws LeaseLostError (exit 4) and writes nothing', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      const before = await snapshot(store);
      // Another writer's change, in the apply transaction between the fence read and the
      // ACK: the only way left to make the SQL fence disagree with the JavaScript one.
      const error = await rejection(
        apply(stealingBeforeAck(store), lease, handlers.v1),
        LeaseLostError,
      );
      expect(error).toBeInstanceOf(OnceqError);
      expect([error.code, error.exitCode, error.eventId]).toEqual(['lease_lost', 4, 'E0001']);
      expect(error.message).toContain('the fenced ACK matched 0 of 1 messages');
      expect(await snapshot(store)).toEqual(before);
    });
  });
}

/** Bumps the generation of every leased row: a newer claim, as seen by the stale ACK. */
const bumpGenerations = defineStatement('test-bump-generations', ({ db }) =>
  db
    .updateTable('messages')
    .set((eb) => ({ generation: eb('generation', '+', 1) }))
    .where('state', '=', 'leased'),
);

/** {@link bumpGenerations} as SQLite's executor runs hand-written SQL (synchronously). */
const BUMP_GENERATIONS_SQL: SqlText = {
  name: 'test-bump-generations',
  sql: "UPDATE messages SET generation = generation + 1 WHERE state = 'leased'",
};

/**
 * `store` whose transactions run {@link bumpGenerations} just before the ACK statement
 * (`ack`, or `ack-with-effects` on PostgreSQL), inside the same transaction. The wrapper
 * inherits the backend's executor (`Object.create`), so SQLite's hand-written statements
 * (`SqliteExecutor.run`) are intercepted by name too.
 */
function stealingBeforeAck(store: Store): Store {
  const wrap = (x: Executor): Executor => {
    const wrapped: Executor = Object.create(x);
    wrapped.rows = async (statement, values, arity) => {
      if (statement.name === 'ack-with-effects') await x.changes(bumpGenerations, {});
      return x.rows(statement, values, arity);
    };
    wrapped.changes = async (statement, values, arity) => {
      if (statement.name === 'ack') await x.changes(bumpGenerations, {});
      return x.changes(statement, values, arity);
    };
    if (x instanceof SqliteExecutor) {
      (wrapped as SqliteExecutor).run = (statement, parameters) => {
        if (statement.name === 'ack') x.run(BUMP_GENERATIONS_SQL, []);
        return x.run(statement, parameters);
      };
    }
    return wrapped;
  };
  const sabotaged: Store = Object.create(store);
  Object.defineProperty(sabotaged, 'transact', {
    value: <T>(fn: (x: Executor) => Promise<T>) => store.transact((x) => fn(wrap(x))),
  });
  return sabotaged;
}
