import { describe, expect, test } from 'bun:test';
import { apply, enqueue } from '@onceq/core';
import {
  countMessages,
  ListArgumentError,
  listMessages,
  type MessagePage,
} from '@onceq/core/admin';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { freshStore, mustClaim, rejection } from './harness.ts';

export function listSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: list`, () => {
    const env = freshStore(factory);

    /** E0001..E0007; E0005 (toy) dead at 1000; E0001 done at 1001; the rest ready at 1000. */
    async function seven() {
      const { store, clock } = env();
      const lines = [1, 2, 3, 4, 6, 7].map((n) => line(`E000${n}`, paid('book', 100 * n)));
      await enqueue(store, batch(...lines, line('E0005', paid('toy', 500))));
      clock.set(1000);
      // Claim order is (available_at, event_id): E0001 first.
      await apply(store, await mustClaim(store), handlers.v1);
      return store;
    }

    test('pages by event id cover every message once, in order, and the last page has no cursor', async () => {
      const store = await seven();
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page: MessagePage = await listMessages(store, { limit: 3, after });
        seen.push(...page.messages.map((m) => m.eventId));
        if (page.next === null) break;
        after = page.next;
      }
      expect(seen).toEqual(['E0001', 'E0002', 'E0003', 'E0004', 'E0005', 'E0006', 'E0007']);
    });

    test('filters by state, error code and id prefix narrow both the page and the count', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0105', paid('toy', 500)), line('E0201', paid('pen', 1))));
      clock.set(1001);
      await apply(store, await mustClaim(store), handlers.v1); // E0105 dead
      const dead = await listMessages(store, { state: 'dead' });
      expect(dead.messages.map((m) => m.eventId)).toEqual(['E0105']);
      expect(await countMessages(store, { state: 'dead', errorCode: 'invalid_payload' })).toBe(1);
      expect(await countMessages(store, { errorCode: 'lease_expired' })).toBe(0);
      expect(await countMessages(store, { idPrefix: 'E02' })).toBe(1);
      expect(await countMessages(store, { idPrefix: 'e02' })).toBe(0);
      expect(await countMessages(store, {})).toBe(2);
      expect(await countMessages(store, { updatedAtOrBefore: 1000 })).toBe(1);
      expect(await countMessages(store, { updatedAtOrAfter: 1001 })).toBe(1);
    });

    test('newest and oldest order by the last change, and their cursors continue where the page ended', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 1)), line('E0002', paid('toy', 2))));
      clock.set(1005);
      await apply(store, await mustClaim(store), handlers.v1); // E0001 done at 1005
      const newest = await listMessages(store, { order: 'newest', limit: 1 });
      expect(newest.messages.map((m) => m.eventId)).toEqual(['E0001']);
      expect(newest.next).toBe('1005:E0001');
      const rest = await listMessages(store, {
        order: 'newest',
        limit: 1,
        after: newest.next ?? '',
      });
      expect(rest.messages.map((m) => m.eventId)).toEqual(['E0002']);
      expect(rest.next).toBeNull();
      const oldest = await listMessages(store, { order: 'oldest' });
      expect(oldest.messages.map((m) => m.eventId)).toEqual(['E0002', 'E0001']);
    });

    test('a page size out of range or a malformed cursor is a ListArgumentError (exit 2)', async () => {
      const { store } = env();
      for (const limit of [0, 501, 1.5]) {
        const error = await rejection(listMessages(store, { limit }), ListArgumentError);
        expect(error.exitCode).toBe(2);
      }
      await rejection(listMessages(store, { order: 'newest', after: 'E0001' }), ListArgumentError);
    });
  });
}
