import { describe, expect, test } from 'bun:test';
import {
  BatchRejectedError,
  enqueue,
  getIdPolicy,
  IdPolicyRefusedError,
  setIdPolicy,
  status,
  work,
} from '@onceq/core';
import { prune } from '@onceq/core/admin';
import { formatIdPolicy, parseIdPolicy } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { freshStore, rejection, snapshot } from './harness.ts';

const REAL_IDS = [
  '550e8400-e29b-41d4-a716-446655440000',
  'evt_3Q9xKZ2eZvKYlo2C',
  'orders-17:883421',
  '!~',
  'x'.repeat(200),
];

export function idPolicySuite(name: string, factory: BackendFactory): void {
  describe(`${name}: id policies`, () => {
    const env = freshStore(factory);

    test('a new store is lesson: a real id is refused naming its line and the policy, nothing written', async () => {
      const { store } = env();
      expect(formatIdPolicy(await getIdPolicy(store))).toBe('lesson');
      const error = await rejection(
        enqueue(store, batch(line('E0001', paid('book', 1)), line('evt_1', paid('pen', 2)))),
        BatchRejectedError,
      );
      expect(error.issues).toEqual([
        {
          line: 2,
          reason:
            'event_id "evt_1" must match E followed by four digits (E0000 to E9999) under the store\'s id policy lesson',
        },
      ]);
      expect((await status(store)).messages.ready).toBe(0);
    });

    test('general accepts UUIDs, evt_ ids, colons, 200 bytes; money is counted once per id', async () => {
      const { store } = env();
      await setIdPolicy(store, parseIdPolicy('general'));
      const lines = REAL_IDS.map((id, i) => line(id, paid('book', i + 1)));
      expect(await enqueue(store, batch(...lines, lines[0] as string))).toEqual({
        accepted: 5,
        duplicates: 1,
      });
      expect(await enqueue(store, batch(...lines))).toEqual({ accepted: 0, duplicates: 5 });
      await work(store, handlers.v1);
      expect(await status(store)).toMatchObject({ effects: 5, total: 15 });
    });

    test('general refuses a space, 201 bytes, non-ASCII and a control character, each line named', async () => {
      const { store } = env();
      await setIdPolicy(store, parseIdPolicy('general'));
      const bad = ['has space', 'x'.repeat(201), 'café', 'tab\there', ''];
      const error = await rejection(
        enqueue(store, batch(...bad.map((id) => line(id, paid('book', 1))))),
        BatchRejectedError,
      );
      expect(error.issues.map((i) => i.line)).toEqual([1, 2, 3, 4, 5]);
      for (const issue of error.issues) {
        expect(issue.reason).toContain("does not fit the store's id policy general");
      }
    });

    // enqueue parses with the policy its previous batch read (a guess that saves a read)
    // and checks every id again against the policy read inside its transaction.
    test('a policy changed since the last enqueue decides, wider or narrower', async () => {
      const { store } = env();
      expect(await enqueue(store, batch(line('E0001', paid('book', 1))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
      await setIdPolicy(store, parseIdPolicy('general'));
      expect(await enqueue(store, batch(line('evt_1', paid('pen', 2))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
      await setIdPolicy(store, parseIdPolicy('pattern:E[0-9]{4}|evt_[0-9]'));
      const error = await rejection(
        enqueue(store, batch(line('evt_2', paid('bag', 3)), line('orders-1', paid('bag', 4)))),
        BatchRejectedError,
      );
      expect(error.issues.map((i) => i.line)).toEqual([2]);
      expect(error.issues[0]?.reason).toContain('id policy pattern:E[0-9]{4}|evt_[0-9]');
      expect((await status(store)).messages.ready).toBe(2);
    });

    test('a pattern policy is anchored: the whole id must match', async () => {
      const { store } = env();
      await setIdPolicy(store, parseIdPolicy('pattern:evt_[0-9A-Za-z]{4,32}'));
      expect(await enqueue(store, batch(line('evt_3Q9x', paid('book', 1))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
      const error = await rejection(
        enqueue(
          store,
          batch(line('xevt_3Q9x', paid('book', 1)), line('evt_3Q9x!', paid('pen', 1))),
        ),
        BatchRejectedError,
      );
      expect(error.issues.map((i) => i.line)).toEqual([1, 2]);
      expect(error.issues[0]?.reason).toContain('id policy pattern:evt_[0-9A-Za-z]{4,32}');
    });

    test('changing the policy is refused while stored ids would not fit (pruned ones included); nothing changes', async () => {
      const { store, clock } = env();
      await setIdPolicy(store, parseIdPolicy('general'));
      await enqueue(store, batch(line('E0001', paid('book', 1)), line('evt_1', paid('pen', 2))));
      await work(store, handlers.v1);
      clock.advance(100);
      expect((await prune(store, { doneOlderThanSeconds: 10 })).done).toBe(2);
      const before = await snapshot(store);
      const error = await rejection(
        setIdPolicy(store, parseIdPolicy('lesson')),
        IdPolicyRefusedError,
      );
      expect([error.code, error.exitCode]).toEqual(['id_policy_refused', 4]);
      expect(error.offenders).toEqual(['evt_1']);
      expect(error.message).toContain('the policy stays general');
      expect(formatIdPolicy(await getIdPolicy(store))).toBe('general');
      expect(await snapshot(store)).toEqual(before);
    });

    test('a change every stored id fits goes through, and enqueue follows the new policy at once', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 1))));
      const changed = await setIdPolicy(store, parseIdPolicy('pattern:E[0-9]{4}|ord-[0-9]+'));
      expect([formatIdPolicy(changed.previous), changed.checked]).toEqual(['lesson', 1]);
      expect(await enqueue(store, batch(line('ord-17', paid('pen', 2))))).toEqual({
        accepted: 1,
        duplicates: 0,
      });
      await setIdPolicy(store, parseIdPolicy('general'));
      await rejection(setIdPolicy(store, parseIdPolicy('lesson')), IdPolicyRefusedError);
    });
  });
}
