/**
 * The one completion path (handler outside the transaction, then `complete`'s fenced
 * write) and the runner's rules: `apply` refusing a stale lease before the handler runs
 * and after it ran, `complete` reporting a stale result while the others commit, no fence
 * read in front of a batch, `runHandler`'s failures, a result read once, and the bounds
 * of an effect. Both backends, like the conformance suite.
 */
import { describe, expect, test } from 'bun:test';
import {
  apply,
  type Completion,
  enqueue,
  type Handler,
  LeaseLostError,
  PermanentFailure,
  type Store,
  show,
  Worker,
  work,
} from '@onceq/core';
import {
  claimMany,
  complete,
  effectResult,
  effectViolation,
  handlerInput,
  MAX_CATEGORY_LENGTH,
  MAX_EFFECT_CENTS,
  runHandler,
} from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { sql } from 'kysely';
import { forEachBackend } from '../support/backends.ts';
import { type BackendFactory, batch, line, nEvents, paid } from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';
import { effectsOf, freshStore, handleAll, mustClaim, rejection } from './harness.ts';

const context = (eventId: string) => ({
  eventId,
  generation: 1,
  attempt: 1,
  signal: new AbortController().signal,
  store: { kind: 'sqlite' as const, schema: 'main' },
});

function completeSuite(factory: BackendFactory): void {
  describe(`${factory.name}: the one completion path`, () => {
    const env = freshStore(factory);

    test('apply with a held lease writes the effect and the ACK', async () => {
      const { store } = env();
      await enqueue(store, nEvents(1).jsonl);
      const lease = await mustClaim(store);
      const outcome = await apply(store, lease, async (p, c) => handlers.v1(p, c));
      expect([outcome.eventId, outcome.outcome]).toEqual(['E0001', 'done']);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0001']);
    });

    test('apply refuses a stale lease before running the handler', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(1).jsonl);
      const stale = await mustClaim(store);
      clock.set(1030); // the lease ran out; a new claim recovers it at generation 2
      await mustClaim(store);
      let ran = 0;
      const handler: Handler = async (p, c) => {
        ran++;
        return handlers.v1(p, c);
      };
      await rejection(apply(store, stale, handler), LeaseLostError);
      expect(ran).toBe(0);
      expect(await effectsOf(store)).toEqual([]);
    });

    test('apply refuses when the lease runs out while the handler runs: no effect, still leased', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(1).jsonl);
      const lease = await mustClaim(store);
      const slow: Handler = async (p, c) => {
        clock.set(1030); // lease_until: expired by the time the result is settled
        return handlers.v1(p, c);
      };
      await rejection(apply(store, lease, slow), LeaseLostError);
      expect(await effectsOf(store)).toEqual([]);
      expect((await show(store, 'E0001')).state).toBe('leased');
    });

    test('complete reports a stale result as lost and commits the others', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(2).jsonl);
      const [first] = await claimMany(store, { limit: 1, leaseSeconds: 2 }); // E0001 until 1002
      const [second] = await claimMany(store, { limit: 1 }); // E0002 until 1030
      if (first === undefined || second === undefined) throw new Error('nothing claimed');
      clock.set(1002);
      const effect = { category: 'book', amountCents: 100 };
      const { outcomes, lost } = await complete(store, [
        { lease: first, result: effectResult(effect) },
        { lease: second, result: effectResult(effect) },
      ]);
      expect(lost.map((l) => [l.eventId, l.code])).toEqual([['E0001', 'lease_lost']]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([['E0002', 'done']]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0002']);
    });

    test('complete (no fence read in front): a lease another claim took is lost with its reason and writes nothing; the others commit, a failure is recorded', async () => {
      const { store, clock } = env();
      await enqueue(
        store,
        batch(
          line('E0001', paid('book', 100)),
          line('E0002', paid('toy', 300)), // v1 knows no toy: permanent failure
          line('E0003', paid('pen', 200)),
        ),
      );
      const [stolen] = await claimMany(store, { limit: 1, leaseSeconds: 2 }); // E0001 until 1002
      const rest = await claimMany(store, { limit: 2 }); // E0002, E0003 until 1030
      if (stolen === undefined) throw new Error('nothing claimed');
      clock.set(1002);
      const thief = await claimMany(store, { limit: 1 }); // recovers E0001 at generation 2
      expect(thief.map((l) => [l.eventId, l.generation])).toEqual([['E0001', 2]]);
      const { outcomes, lost } = await handleAll(store, [stolen, ...rest], handlers.v1);
      expect(lost.map((l) => [l.eventId, l.code, l.message])).toEqual([
        [
          'E0001',
          'lease_lost',
          expect.stringContaining('the message is at generation 2, a newer claim owns it'),
        ],
      ]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0002', 'dead'],
        ['E0003', 'done'],
      ]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(['E0003']);
      expect((await show(store, 'E0001')).state).toBe('leased');
    });

    test('the long-running Worker records a batch of successes with no fence read in front, on both backends', async () => {
      const { store } = env();
      const events = nEvents(6);
      await enqueue(store, events.jsonl);
      let fenceReads = 0;
      const counted: Store = {
        ...store,
        driver: {
          ...store.driver,
          readFenced: (x, leases) => {
            fenceReads++;
            return store.driver.readFenced(x, leases);
          },
        },
      };
      const worker = new Worker(counted, handlers.v1, { drain: true, batch: 6, concurrency: 3 });
      await worker.start();
      const summary = await worker.finished();
      expect([summary.claimed, summary.done, summary.lost]).toEqual([6, 6, 0]);
      expect((await effectsOf(store)).map((e) => e.eventId)).toEqual(events.ids);
      expect(fenceReads).toBe(0);
    });

    test('work in batches stops at max, handles failures, and writes each effect once', async () => {
      const { store } = env();
      await enqueue(store, nEvents(25).jsonl);
      const throwing = (p: Parameters<typeof handlers.v1>[0], c: { eventId: string }) => {
        if (c.eventId === 'E0004') throw new Error('boom');
        return handlers.v1(p, c as never);
      };
      const first = await work(store, throwing, { batch: 10, max: 15 });
      expect(first).toEqual({ claimed: 15, done: 14, retried: 1, dead: 0, lost: 0 });
      const second = await work(store, handlers.v1, { batch: 10 });
      expect(second).toEqual({ claimed: 10, done: 10, retried: 0, dead: 0, lost: 0 });
      const effects = (await effectsOf(store)).map((e) => e.eventId);
      expect(effects).toHaveLength(24);
      expect(new Set(effects).size).toBe(24);
      expect((await show(store, 'E0004')).state).toBe('ready');
    });

    test("a completion naming a missing table or column is dead at once with the database's reason; a good one in the batch commits", async () => {
      const { store } = env();
      // In the store's schema, so named with it (unqualified names resolve by search_path).
      const ledger = `${store.schema}.user_ledger`;
      await rawDb(store, (db) =>
        sql`CREATE TABLE ${sql.raw(ledger)} (event_id TEXT PRIMARY KEY, amount INTEGER NOT NULL)`.execute(
          db,
        ),
      );
      await enqueue(store, nEvents(5).jsonl);
      const leases = await claimMany(store, { limit: 5 });
      const handler: Handler = (_payload, context): Completion => {
        switch (context.eventId) {
          case 'E0001':
            return { insert: { no_such_ledger: { event_id: context.eventId } } };
          case 'E0002':
            return { insert: { [ledger]: { event_id: context.eventId, nope: 1 } } };
          case 'E0003':
            return {
              async write(tx) {
                await tx.query('UPDATE no_such_ledger SET amount = 1');
              },
            };
          case 'E0004':
            return {
              async write(tx) {
                await tx.query(`UPDATE ${ledger} SET nope = 1`);
              },
            };
          default:
            return { insert: { [ledger]: { event_id: context.eventId, amount: 5 } } };
        }
      };
      const { outcomes, lost } = await handleAll(store, leases, handler);
      expect(lost).toEqual([]);
      expect(outcomes.map((o) => [o.eventId, o.outcome])).toEqual([
        ['E0001', 'dead'],
        ['E0002', 'dead'],
        ['E0003', 'dead'],
        ['E0004', 'dead'],
        ['E0005', 'done'],
      ]);
      for (const [id, named] of [
        ['E0001', 'no_such_ledger'],
        ['E0002', 'nope'],
        ['E0003', 'no_such_ledger'],
        ['E0004', 'nope'],
      ]) {
        const dead = await show(store, id as string);
        expect([dead.state, dead.attempts, dead.lastErrorCode]).toEqual([
          'dead',
          1,
          'write_failed',
        ]);
        expect(dead.lastErrorDetail).toStartWith("the store refused this message's ");
        expect(dead.lastErrorDetail).toContain(named as string);
      }
    });
  });
}

forEachBackend('the one completion path', completeSuite);

describe('runHandler turns what a handler does into a result', () => {
  test('a plain throw is a temporary handler_error with its message', async () => {
    const result = await runHandler(
      async () => {
        throw new Error('boom');
      },
      '{"a":1}',
      context('E0001'),
    );
    expect(result).toEqual({
      failure: { kind: 'temporary', code: 'handler_error', detail: 'the handler threw: boom' },
    });
  });

  test('a HandlerFailure keeps its kind and code', async () => {
    const result = await runHandler(
      async () => {
        throw new PermanentFailure('invalid_payload', 'no category');
      },
      '{"a":1}',
      context('E0001'),
    );
    expect(result).toEqual({
      failure: { kind: 'permanent', code: 'invalid_payload', detail: 'no category' },
    });
  });

  test('a stored payload that is not an object never reaches the handler', async () => {
    let ran = 0;
    const result = await runHandler(
      async () => {
        ran++;
        return { category: 'book', amountCents: 1 };
      },
      '[1]',
      context('E0001'),
    );
    expect(ran).toBe(0);
    expect(result).toEqual({
      failure: {
        kind: 'permanent',
        code: 'invalid_payload',
        detail: 'the stored payload is not a JSON object',
      },
    });
    expect(handlerInput('{"a":1}')).toEqual({ payload: expect.objectContaining({ a: 1 }) });
  });
});

describe('effectViolation: the effects table CHECKs, in JavaScript first', () => {
  test('amounts from 1 to the maximum pass, one outside either end does not', () => {
    expect(effectViolation({ category: 'book', amountCents: 1 })).toBeNull();
    expect(effectViolation({ category: 'book', amountCents: MAX_EFFECT_CENTS })).toBeNull();
    for (const amountCents of [0, MAX_EFFECT_CENTS + 1, 1.5]) {
      expect(effectViolation({ category: 'book', amountCents })).toBe(
        `the handler's effect has amountCents ${String(amountCents)}, not an integer from 1 to ${MAX_EFFECT_CENTS}`,
      );
    }
  });

  test('a string or a bigint amount reads apart from the number it spells', () => {
    const reason = (amountCents: unknown) =>
      effectViolation({ category: 'book', amountCents }) as string;
    expect(reason('100')).toContain('amountCents "100", not an integer');
    expect(reason(5n)).toContain('amountCents 5n, not an integer');
    expect(effectViolation({ category: 5n, amountCents: 5 })).toBe(
      "the handler's effect has category 5n, not a non-empty string",
    );
  });

  test(`a category of up to ${MAX_CATEGORY_LENGTH} characters passes; a longer one is refused by its length`, () => {
    expect(
      effectViolation({ category: 'é'.repeat(MAX_CATEGORY_LENGTH), amountCents: 5 }),
    ).toBeNull();
    expect(effectViolation({ category: 'x'.repeat(1_000_000), amountCents: 5 })).toBe(
      `the handler's effect has a category of 1,000,000 characters; at most ${MAX_CATEGORY_LENGTH} are allowed`,
    );
  });

  test('a missing or empty category, and what is not an object, are named', () => {
    expect(effectViolation({ category: '', amountCents: 5 })).toBe(
      `the handler's effect has category "", not a non-empty string`,
    );
    expect(effectViolation({ amountCents: 5 })).toBe(
      `the handler's effect has category undefined, not a non-empty string`,
    );
    expect(effectViolation(null)).toBe('the handler returned null, not an effect object');
    expect(effectViolation('x')).toBe('the handler returned string, not an effect object');
    expect(effectViolation(undefined)).toBe('the handler returned undefined, not an effect object');
  });
});
