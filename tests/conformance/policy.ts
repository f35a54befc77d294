// A worker's policy on each backend (docs/worker.md, docs/ordering.md): `on_dead: skip`
// lets a dead head's key go on, stamped by the claim so an expired lease follows it too,
// and a later redrive of that message never makes a second head of its key.
import { describe, expect, test } from 'bun:test';
import {
  apply,
  type EventInput,
  enqueue,
  fail,
  type HandlerContext,
  redrive,
  type Store,
  show,
  skip,
  TemporaryFailure,
  work,
} from '@onceq/core';
import { blockedKeys } from '@onceq/core/admin';
import { claimMany, findCounterDrift } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { BackendFactory } from '../support/factories.ts';
import { freshStore } from './harness.ts';

function keyed(key: string, first: number, n: number): EventInput[] {
  return Array.from({ length: n }, (_, i) => ({
    eventId: `E${String(first + i).padStart(4, '0')}`,
    payload: { category: 'book', amount_cents: first + i },
    key,
  }));
}

const PERMANENT = { kind: 'permanent', code: 'broken' } as const;

/** The store as a worker with `on_dead: skip` sees it. */
const skipping = (store: Store): Store => ({
  ...store,
  protocol: { ...store.protocol, onDead: 'skip' },
});

async function claimIds(store: Store): Promise<string[]> {
  return (await claimMany(store, { limit: 100 })).map((l) => l.eventId);
}

/** `n` messages of key A enqueued and its head dead under `on_dead: skip`; that worker. */
async function headDeadUnderSkip(store: Store, n: number): Promise<Store> {
  const worker = skipping(store);
  await enqueue(store, keyed('A', 1, n));
  const [head] = await claimMany(worker, { limit: 10 });
  if (head === undefined) throw new Error('the head of key A was not claimable');
  await fail(worker, head, PERMANENT);
  return worker;
}

export function policySuite(name: string, factory: BackendFactory): void {
  describe(`${name}: policy`, () => {
    const env = freshStore(factory);

    test('on_dead skip: a dead head lets its key go on at once and blocks nothing', async () => {
      const { store } = env();
      const worker = await headDeadUnderSkip(store, 3);
      expect((await show(store, 'E0001')).state).toBe('dead');
      expect((await show(store, 'E0002')).state).toBe('ready');
      expect((await blockedKeys(store)).count).toBe(0);
      expect(await claimIds(worker)).toEqual(['E0002']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('on_dead block (the default) still holds the key', async () => {
      const { store } = env();
      await enqueue(store, keyed('A', 1, 2));
      const [head] = await claimMany(store, { limit: 10 });
      await fail(store, head as never, PERMANENT);
      expect((await show(store, 'E0002')).state).toBe('waiting');
      expect((await blockedKeys(store)).count).toBe(1);
    });

    test('an expired lease follows the on_dead its claim stamped, whichever worker recovers it', async () => {
      const { store, clock } = env();
      await enqueue(store, keyed('A', 1, 2));
      for (let t = 1000; t < 1003; t++) {
        clock.set(t);
        const leases = await claimMany(skipping(store), { limit: 10, leaseSeconds: 1 });
        expect(leases.map((l) => l.eventId)).toEqual(['E0001']);
      }
      clock.set(1003);
      // A worker with the default policy recovers the last expired claim: dead, key released
      // (PostgreSQL's claim reads the ready rows as its statement began: the next claim).
      expect([...(await claimIds(store)), ...(await claimIds(store))]).toEqual(['E0002']);
      expect((await show(store, 'E0001')).state).toBe('dead');
    });

    test('redrive of a message that died under skip puts it at its key end, never a second head', async () => {
      const { store } = env();
      const worker = await headDeadUnderSkip(store, 3);
      const [second] = await claimMany(worker, { limit: 10 });
      expect(second?.eventId).toBe('E0002');
      // E0002 is leased: the redriven E0001 waits, behind E0003 too.
      expect(await redrive(store, ['E0001'])).toEqual(['E0001']);
      expect((await show(store, 'E0001')).state).toBe('waiting');
      expect(await claimIds(store)).toEqual([]);
      await apply(store, second as never, handlers.v1);
      const order: string[] = [];
      for (;;) {
        const leases = await claimMany(store, { limit: 100 });
        if (leases.length === 0) break;
        expect(leases).toHaveLength(1);
        for (const lease of leases) {
          await apply(store, lease, handlers.v1);
          order.push(lease.eventId);
        }
      }
      expect(order).toEqual(['E0003', 'E0001']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('redrive after skip when the key has nothing unfinished: the message is its only head', async () => {
      const { store } = env();
      const worker = await headDeadUnderSkip(store, 2);
      const [second] = await claimMany(worker, { limit: 10 });
      await apply(store, second as never, handlers.v1);
      expect(await redrive(store, 'all')).toEqual(['E0001']);
      expect((await show(store, 'E0001')).state).toBe('ready');
      expect(await claimIds(store)).toEqual(['E0001']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('on_dead skip: a message enqueued behind a key whose last message died is its head at once', async () => {
      const { store } = env();
      const worker = await headDeadUnderSkip(store, 1);
      await enqueue(store, keyed('A', 2, 2));
      expect((await show(store, 'E0002')).state).toBe('ready');
      expect((await show(store, 'E0003')).state).toBe('waiting');
      expect(await claimIds(worker)).toEqual(['E0002']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('on_dead skip: skipping the dead message later releases nothing more of its key', async () => {
      const { store } = env();
      const worker = await headDeadUnderSkip(store, 3);
      const [second] = await claimMany(worker, { limit: 10 });
      expect(second?.eventId).toBe('E0002');
      // E0001 let its key go when it died: its skip must not make E0003 a second head.
      expect(await skip(store, ['E0001'])).toEqual(['E0001']);
      expect((await show(store, 'E0003')).state).toBe('waiting');
      expect(await claimIds(store)).toEqual([]);
      await apply(store, second as never, handlers.v1);
      expect(await claimIds(store)).toEqual(['E0003']);
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('one worker of two queues runs each message with its queue handler, lease, backoff and attempts', async () => {
      const { store, clock } = env();
      const book = (eventId: string): EventInput[] => [
        { eventId, payload: { category: 'book', amount_cents: 100 } },
      ];
      await enqueue(store, book('E0001'), { queue: 'payments' });
      await enqueue(store, book('E0002'), { queue: 'refunds' });
      await enqueue(store, book('E0003'));
      const ran: string[] = [];
      // Each handler notes what it ran and the lease its claim gave, then fails for a while.
      const down = (name: string) => async (_payload: unknown, context: HandlerContext) => {
        const { leaseUntil } = await show(store, context.eventId);
        ran.push(`${name} ${context.eventId} until ${leaseUntil}`);
        throw new TemporaryFailure(`${name}_down`, 'the provider is down');
      };
      const options = {
        attempts: 5,
        queues: {
          payments: { handler: down('pay'), attempts: 2, backoff: [5], leaseSeconds: 7 },
          refunds: { handler: down('refund'), attempts: 3, backoff: '20s', leaseSeconds: 11 },
          default: {},
        },
      };
      const at = async (now: number) => {
        clock.set(now);
        await work(store, handlers.v1, options);
        const states = [];
        for (const id of ['E0001', 'E0002', 'E0003']) {
          const { state, attempts, availableAt } = await show(store, id);
          states.push([id, state, attempts, availableAt]);
        }
        return states;
      };
      expect(await at(1000)).toEqual([
        ['E0001', 'ready', 1, 1005],
        ['E0002', 'ready', 1, 1020],
        ['E0003', 'done', 1, 1000],
      ]);
      expect(ran).toEqual(['pay E0001 until 1007', 'refund E0002 until 1011']);
      // payments' second attempt is its last; refunds waits for its own backoff.
      expect(await at(1005)).toEqual([
        ['E0001', 'dead', 2, 1005],
        ['E0002', 'ready', 1, 1020],
        ['E0003', 'done', 1, 1000],
      ]);
      expect((await at(1020))[1]).toEqual(['E0002', 'ready', 2, 1040]);
      expect((await at(1040))[1]).toEqual(['E0002', 'dead', 3, 1040]);
      expect(ran).toEqual([
        'pay E0001 until 1007',
        'refund E0002 until 1011',
        'pay E0001 until 1012',
        'refund E0002 until 1031',
        'refund E0002 until 1051',
      ]);
      expect((await show(store, 'E0001')).lastErrorCode).toBe('pay_down');
      expect((await show(store, 'E0002')).lastErrorCode).toBe('refund_down');
      expect(await findCounterDrift(store)).toEqual([]);
    });

    test('work with attempts and a backoff list retries on that schedule, then dies', async () => {
      const { store, clock } = env();
      await enqueue(store, keyed('A', 1, 1));
      const down = () => {
        throw Object.assign(new Error('down'), {
          [Symbol.for('onceq.failure')]: 'temporary',
          code: 'provider_down',
        });
      };
      const policy = { attempts: 3, backoff: [10, 60] };
      const expected = [
        [1000, 'ready', 1010],
        [1010, 'ready', 1070],
        [1070, 'dead', 1070],
      ] as const;
      for (const [now, state, availableAt] of expected) {
        clock.set(now);
        await work(store, down, policy);
        expect(await show(store, 'E0001')).toMatchObject({ state, availableAt });
      }
    });
  });
}
