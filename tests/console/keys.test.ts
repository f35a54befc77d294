// The console's blocked keys page over HTTP, on SQLite and on PostgreSQL: each key held by
// a dead head with the head (a link to its message), its error, and what waits behind;
// markup in a key is escaped; a skip takes the key off the page.
import { describe, expect, test } from 'bun:test';
import { startConsole } from '@onceq/console';
import { enqueue, show, skip, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { forEachBackend } from '../support/backends.ts';
import { CONSOLE_T0 } from '../support/console.ts';
import { testClock } from '../support/factories.ts';

const order = (eventId: string, category: string, key: string) => ({
  eventId,
  payload: { category, amount_cents: 100 },
  key,
});

forEachBackend('console blocked keys', (factory) => {
  describe(`console blocked keys on ${factory.name}`, () => {
    test('/keys lists each key held by a dead head, linked to the head, with its error and the messages behind it', async () => {
      const opened = await factory.open(testClock(CONSOLE_T0));
      const { store } = opened;
      const running = startConsole({
        store,
        port: 0,
        allowWrites: false,
        token: null,
        hideFields: [],
        log: () => {},
      });
      const get = async (path: string) => {
        const res = await fetch(running.url + path);
        return { status: res.status, body: await res.text() };
      };
      try {
        const empty = await get('/keys');
        expect(empty.status).toBe(200);
        expect(empty.body).toContain('No blocked keys');
        expect(empty.body).toContain('<a href="/keys" aria-current="page">Blocked keys</a>');

        // v1 refuses toys for good: each key's toy is its dead head.
        await enqueue(store, [
          order('E0001', 'toy', 'cust-1'),
          order('E0002', 'book', 'cust-1'),
          order('E0003', 'book', 'cust-1'),
          order('E0004', 'toy', '<b>c2</b>'),
          order('E0005', 'book', '<b>c2</b>'),
          order('E0006', 'book', 'cust-3'),
        ]);
        await work(store, handlers.v1);
        const head = await show(store, 'E0001');
        expect(head.state).toBe('dead');

        const listed = await get('/keys');
        expect(listed.status).toBe(200);
        expect(listed.body).toContain('data-testid="blocked-count">2<');
        expect(listed.body).toContain('<a href="/messages/E0001">E0001</a>');
        expect(listed.body).toContain('<a href="/messages/E0004">E0004</a>');
        expect(listed.body).not.toContain('E0006');
        expect(listed.body).toContain(`<span class="mono">${head.lastErrorCode}</span>`);
        expect(listed.body).toContain('data-testid="waiting-cust-1">2<');
        expect(listed.body).toContain('&lt;b&gt;c2&lt;/b&gt;');
        expect(listed.body).not.toContain('<b>c2</b>');
        // The head's link leads to its message.
        const message = await get('/messages/E0001');
        expect(message.status).toBe(200);
        expect(message.body).toContain('dead');

        await skip(store, ['E0004']);
        const after = await get('/keys');
        expect(after.body).toContain('data-testid="blocked-count">1<');
        expect(after.body).not.toContain('E0004');
      } finally {
        await running.stop();
        await opened.cleanup();
      }
    });
  });
});
