// The console's deliveries page over HTTP, on SQLite and on PostgreSQL: deliveries per
// endpoint and state, an endpoint a 410 disabled with why and since when, the dead ones
// with their last attempt, and their redrive, which needs writes allowed, a session, the
// CSRF token and this origin. No page shows a secret.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { enqueue, type Handler, work } from '@onceq/core';
import { listDeliveries, sendDeliveries } from '@onceq/core/webhooks';
import { forEachBackend } from '../support/backends.ts';
import { type ConsoleFixture, consoleFixture } from '../support/console.ts';
import { batch, line, paid } from '../support/factories.ts';
import { serveOnLoopback } from '../support/loopback-server.ts';

const HOOK_MS = 60_000;
const SECRET = `whsec_${Buffer.from('console secret, thirty-two bytes').toString('base64')}`;

async function get(c: ConsoleFixture, path: string, init: RequestInit = {}) {
  const res = await fetch(c.url + path, { redirect: 'manual', ...init });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

function post(c: ConsoleFixture, path: string, form: [string, string][], cookie?: string) {
  return get(c, path, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: {
      origin: c.url,
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie === undefined ? {} : { cookie }),
    },
  });
}

async function signIn(c: ConsoleFixture): Promise<{ cookie: string; csrf: string }> {
  const res = await post(c, '/login', [
    ['token', c.token as string],
    ['next', '/deliveries'],
  ]);
  expect(res.status).toBe(303);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await get(c, '/deliveries', { headers: { cookie } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf as string };
}

forEachBackend('console deliveries', (factory) => {
  describe(`console deliveries on ${factory.name}`, () => {
    let c: ConsoleFixture;
    let receiver: ReturnType<typeof Bun.serve>;
    beforeAll(async () => {
      receiver = serveOnLoopback(() => new Response('down for maintenance', { status: 500 }));
      c = await consoleFixture(factory, { allowWrites: true, token: 'a-console-token-of-length' });
      await enqueue(
        c.store,
        batch(line('E2001', paid('book', 100)), line('E2002', paid('pen', 200))),
      );
      const delivering: Handler = (_payload, context) => ({
        // The fixture's own ready messages are worked too: only these two deliver.
        deliver: context.eventId.startsWith('E2')
          ? [{ to: 'billing', body: { event: context.eventId } }]
          : [],
      });
      await work(c.store, delivering);
      await sendDeliveries(c.store, {
        endpoints: [
          {
            name: 'billing',
            url: `http://127.0.0.1:${receiver.port}/in`,
            secrets: [SECRET],
            schedule: [0],
          },
        ],
        untilIdle: true,
      });
    }, HOOK_MS);
    afterAll(async () => {
      receiver.stop(true);
      await c.stop();
    }, HOOK_MS);

    test('per endpoint counts, then the dead deliveries with their last attempt; no secret', async () => {
      // A console with a token needs a session for reads too.
      expect((await get(c, '/deliveries')).status).toBe(303);
      const { cookie } = await signIn(c);
      const page = await get(c, '/deliveries', { headers: { cookie } });
      expect(page.status).toBe(200);
      expect(page.body).toContain('aria-current="page">Deliveries');
      const endpoints = /data-testid="endpoints">([\s\S]*?)<\/table>/.exec(page.body)?.[1] ?? '';
      const cells = [...endpoints.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((m) => m[1]);
      // endpoint, pending, leased, delivered, dead, attempts
      expect(cells.slice(0, 6)).toEqual(['billing', '0', '0', '0', '2', '2']);
      const dead = /data-testid="dead-deliveries">([\s\S]*?)<\/table>/.exec(page.body)?.[1] ?? '';
      expect(dead).toContain('E2001:1');
      expect(dead).toContain('E2002:1');
      expect(dead).toContain('the endpoint answered 500');
      expect(page.body).not.toContain(SECRET.slice(6, 30));
    });

    test('a redrive needs a session and the CSRF token; then exactly the selected ones, logged', async () => {
      const anonymous = await post(c, '/deliveries/redrive', [
        ['ids', 'E2001:1'],
        ['csrf', 'x'],
      ]);
      expect(anonymous.status).toBe(403);
      const { cookie, csrf } = await signIn(c);
      const noCsrf = await post(c, '/deliveries/redrive', [['ids', 'E2001:1']], cookie);
      expect(noCsrf.status).toBe(403);
      const badId = await post(
        c,
        '/deliveries/redrive',
        [
          ['csrf', csrf],
          ['ids', 'no colon'],
        ],
        cookie,
      );
      expect(badId.status).toBe(400);
      expect((await listDeliveries(c.store, { state: 'dead' })).length).toBe(2);

      const form = await get(c, '/deliveries', { headers: { cookie } });
      expect(form.body).toContain('action="/deliveries/redrive"');
      expect(form.body).toContain('name="ids" value="E2001:1"');
      const done = await post(
        c,
        '/deliveries/redrive',
        [
          ['csrf', csrf],
          ['ids', 'E2001:1'],
        ],
        cookie,
      );
      expect(done.status).toBe(200);
      expect(done.body).toContain('Redriven <strong>1</strong> delivery: E2001:1');
      const states = (await listDeliveries(c.store)).map((d) => [d.webhookId, d.state]);
      expect(states).toEqual([
        ['E2001:1', 'pending'],
        ['E2002:1', 'dead'],
      ]);
      expect(c.logs.some((l) => /delivery redrive by session \S+ from \S+: E2001:1/.test(l))).toBe(
        true,
      );
      const again = await post(
        c,
        '/deliveries/redrive',
        [
          ['csrf', csrf],
          ['ids', 'E2001:1'],
        ],
        cookie,
      );
      expect(again.status).toBe(409);
      expect(again.body).toContain('not dead');
    });

    test('an endpoint a 410 disabled is shown disabled, why and since when; the others are not', async () => {
      const gone = serveOnLoopback(() => new Response('gone', { status: 410 }));
      try {
        await enqueue(c.store, batch(line('E3001', paid('book', 300))));
        await work(c.store, (_payload, context) => ({
          deliver: [{ to: 'partner', body: { event: context.eventId } }],
        }));
        await sendDeliveries(c.store, {
          endpoints: [
            {
              name: 'partner',
              url: `http://127.0.0.1:${gone.port}/in`,
              secrets: [SECRET],
              schedule: [0, 60],
            },
          ],
          untilIdle: true,
        });
      } finally {
        gone.stop(true);
      }
      const { cookie } = await signIn(c);
      const page = await get(c, '/deliveries', { headers: { cookie } });
      const table = /data-testid="endpoints">([\s\S]*?)<\/table>/.exec(page.body)?.[1] ?? '';
      const rows = [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => m[1] as string);
      const row = (name: string) => rows.find((r) => r.includes(`>${name}</td>`)) ?? '';
      // endpoint, pending, leased, delivered, dead, attempts; then why, and since when.
      const cells = [...row('partner').matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((m) => m[1]);
      expect(cells).toEqual(['partner', '1', '0', '0', '0', '1']);
      expect(row('partner')).toContain(
        '<span class="state state-dead">it answered 410 Gone</span>',
      );
      expect(row('partner')).toContain(
        `<time datetime="${new Date(c.clock() * 1000).toISOString()}"`,
      );
      expect(row('billing')).toContain('<td>—</td>');
    });
  });
});
