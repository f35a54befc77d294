// The web console over HTTP, on SQLite and on PostgreSQL: every route, the read-only
// refusal, sign-in with the token, CSRF / Origin / Host checks, pagination bounds, bad
// query parameters (400 naming the parameter), hidden fields, escaping, and no password.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '@onceq/cli/cli.ts';
import type { Context } from '@onceq/cli/context.ts';
import { startConsole } from '@onceq/console';
import { enqueue, type Store, show, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { forEachBackend, onPostgres } from '../support/backends.ts';
import { BIN, type CliSandbox, cliSandbox, DEMO_JSONL } from '../support/cli.ts';
import {
  CONSOLE_T0,
  type ConsoleFixture,
  consoleFixture,
  DEAD_IDS,
  READY_COUNT,
  rowIds,
} from '../support/console.ts';
import {
  type BackendFactory,
  batch,
  line,
  paid,
  postgresFactory,
  sqliteFactory,
  testClock,
} from '../support/factories.ts';

interface Answer {
  status: number;
  body: string;
  headers: Headers;
}

async function get(c: ConsoleFixture, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(c.url + path, { redirect: 'manual', ...init });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

function post(
  c: ConsoleFixture,
  path: string,
  form: [string, string][],
  headers: Record<string, string> = {},
) {
  return get(c, path, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { origin: c.url, 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

/** Signs in with the token; returns the cookie header and the session's CSRF token. */
async function signIn(c: ConsoleFixture): Promise<{ cookie: string; csrf: string }> {
  const res = await post(c, '/login', [
    ['token', c.token as string],
    ['next', '/dlq'],
  ]);
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe('/dlq');
  const setCookie = res.headers.get('set-cookie') ?? '';
  expect(setCookie).toContain('HttpOnly');
  expect(setCookie).toContain('SameSite=Strict');
  const cookie = setCookie.split(';')[0] as string;
  const page = await get(c, '/dlq', { headers: { cookie } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf as string };
}

/** Hooks start stores, servers and a browser: bun gives hooks 5 s unless told. */
const HOOK_MS = 60_000;
/** Tests that start real processes: bounded, but not by bun's 5 s default. */
const PROCESS_MS = 120_000;

function runOn(factory: BackendFactory) {
  describe(`console over HTTP on ${factory.name}`, () => {
    describe('read-only', () => {
      let c: ConsoleFixture;
      beforeAll(async () => {
        c = await consoleFixture(factory, { hideFields: ['email'] });
      }, HOOK_MS);
      afterAll(() => c.stop(), HOOK_MS);

      test('the overview shows counts by state, totals, ages and an empty-safe chart', async () => {
        const res = await get(c, '/');
        expect(res.status).toBe(200);
        expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
        expect(res.body).toContain('data-testid="count-dead">4<');
        expect(res.body).toContain(`data-testid="count-ready">${READY_COUNT}<`);
        expect(res.body).toContain('data-testid="total-book">10000<');
        expect(res.body).toContain('data-testid="total-all">12500<');
        expect(res.body).toContain('read-only');
        expect(res.body).toContain('Oldest ready message');
        const live = await get(c, '/overview/live');
        expect(live.status).toBe(200);
        expect(live.body).toContain('data-testid="count-done">3<');
        expect(live.body).not.toContain('<html');
      });

      test('assets are served from the process itself', async () => {
        const css = await get(c, '/assets/style.css');
        expect(css.status).toBe(200);
        expect(css.headers.get('content-type')).toContain('text/css');
        expect(css.body).toContain('prefers-color-scheme: dark');
        const js = await get(c, '/assets/console.js');
        expect(js.headers.get('content-type')).toContain('javascript');
        expect(js.body).toContain('data-live-src');
      });

      test('messages: pages of 50 by keyset, the next page, the last page', async () => {
        const first = await get(c, '/messages');
        expect(first.status).toBe(200);
        expect(first.body).toContain(`data-testid="match-count">${READY_COUNT + 7}<`);
        const ids = rowIds(first.body);
        expect(ids.length).toBe(50);
        expect(ids[0]).toBe('E0001');
        const next = /rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
        expect(next).toBeDefined();
        const second = await get(c, next as string);
        const more = rowIds(second.body);
        expect(more.length).toBe(READY_COUNT + 7 - 50);
        expect((more[0] as string) > (ids[49] as string)).toBe(true);
        expect(second.body).toContain('last page');
        const small = await get(c, '/messages?limit=1&order=newest');
        expect(rowIds(small.body).length).toBe(1);
      });

      test('messages: server-side filters by state, error code, id prefix and age', async () => {
        const dead = await get(c, '/messages?state=dead&code=invalid_payload');
        expect(rowIds(dead.body).sort()).toEqual(DEAD_IDS);
        const prefix = await get(c, '/messages?prefix=E100');
        expect(rowIds(prefix.body)).toEqual(Array.from({ length: 10 }, (_, i) => `E100${i}`));
        // The seeded dead messages changed 90 s before the console's now; the ready ones 30 s.
        const older = await get(c, '/messages?older=1m&state=dead');
        expect(rowIds(older.body).length).toBe(4);
        const newer = await get(c, '/messages?newer=1m&state=dead');
        expect(newer.body).toContain('No messages match this filter.');
      });

      test('bad parameters answer 400 with the message next to the field', async () => {
        const cases: [string, string][] = [
          ['/messages?limit=0', 'limit must be a whole number from 1 to 500'],
          ['/messages?limit=501', 'limit must be a whole number from 1 to 500'],
          ['/messages?limit=ten', 'limit must be'],
          ['/messages?state=zombie', 'state must be one of'],
          ['/messages?order=sideways', 'order must be one of'],
          ['/messages?older=5x', 'older must be a number with a unit'],
          ['/messages?colour=red', 'unknown parameter &quot;colour&quot;'],
          ['/messages?state=dead&state=done', 'given twice'],
          ['/messages?order=oldest&after=nonsense', 'is not one a previous page returned'],
          ['/dlq?state=ready', 'this page lists dead messages only'],
        ];
        for (const [path, message] of cases) {
          const res = await get(c, path);
          expect({ path, status: res.status }).toEqual({ path, status: 400 });
          expect(res.body).toContain(message);
          expect(res.body).toContain('role="alert"');
        }
        const field = await get(c, '/messages?limit=0');
        expect(field.body).toContain('id="f-limit" name="limit" value="0"');
        expect(field.body).toContain('aria-describedby="err-limit"');
      });

      test('message detail: canonical payload keeps 10000.0 a float; unknown id is 404', async () => {
        const res = await get(c, '/messages/E0006');
        expect(res.status).toBe(200);
        expect(res.body).toContain('&quot;amount_cents&quot;: 10000.0');
        expect(res.body).toContain('data-testid="error-code">invalid_payload<');
        expect(res.body).toContain('datetime="');
        expect(res.body).toMatch(/\(90 s ago\)/); // as the CLI writes it
        const missing = await get(c, '/messages/E9999');
        expect(missing.status).toBe(404);
        expect(missing.body).toContain('No message has the event id');
      });

      test('hidden fields never reach a page; markup in payloads is escaped', async () => {
        for (const path of ['/messages/E0007', '/messages?prefix=E0007']) {
          const res = await get(c, path);
          expect(res.body).not.toContain('alice@example.com');
          expect(res.body).toContain('(hidden)');
          expect(res.body).not.toContain('<script>alert(1)');
        }
        const detail = await get(c, '/messages/E0007');
        expect(detail.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      });

      test('the DLQ lists dead messages only and says when nothing matches', async () => {
        const res = await get(c, '/dlq');
        expect(res.status).toBe(200);
        expect(rowIds(res.body).sort()).toEqual(DEAD_IDS);
        expect(res.body).toContain('name="ids" value="E0003"');
        const none = await get(c, '/dlq?prefix=E9');
        expect(none.body).toContain('No dead messages match this filter.');
      });

      test('preview is a dry run: accepted / still rejected and why, nothing changes', async () => {
        const res = await get(c, '/dlq/preview?scope=selected&ids=E0003&ids=E0005&handler=v2');
        expect(res.status).toBe(200);
        expect(res.body).toContain('<strong>1 of 2</strong> would now be accepted');
        expect(res.body).toMatch(/preview-E0005[\s\S]*still rejected[\s\S]*invalid_payload/);
        expect(res.body).toContain(
          'read-only: start it with <code>onceq console --allow-writes</code>',
        );
        expect((await show(c.store, 'E0003')).state).toBe('dead');
        const all = await get(c, '/dlq/preview?scope=all&handler=v1');
        expect(all.body).toContain('<strong>0 of 4</strong>');
        const filtered = await get(c, '/dlq/preview?scope=all&handler=v2&prefix=E000&older=1m');
        expect(filtered.body).toContain('<strong>2 of 4</strong>');
      });

      test('preview refusals: unknown handler, empty selection, a live message', async () => {
        const v9 = await get(c, '/dlq/preview?ids=E0003&handler=v9');
        expect(v9.status).toBe(400);
        expect(v9.body).toContain('unknown handler &quot;v9&quot; (known: v1, v2)');
        const empty = await get(c, '/dlq/preview?scope=selected&handler=v2');
        expect(empty.status).toBe(400);
        expect(empty.body).toContain('select at least one message');
        const live = await get(c, '/dlq/preview?ids=E0001&ids=E0003&handler=v2');
        expect(live.status).toBe(409);
        expect(live.body).toContain('E0001 is done');
        const unknown = await get(c, '/dlq/preview?ids=E0003&handler=v2&colour=red');
        expect(unknown.status).toBe(400);
      });

      test('a read-only console refuses every write with 403 and changes nothing', async () => {
        const res = await post(c, '/dlq/redrive', [
          ['ids', 'E0003'],
          ['csrf', 'x'],
        ]);
        expect(res.status).toBe(403);
        expect(res.body).toContain('read-only');
        expect((await show(c.store, 'E0003')).state).toBe('dead');
        const login = await post(c, '/login', [['token', 'anything']]);
        expect(login.status).toBe(403);
        expect((await get(c, '/login')).body).toContain('Nothing to sign in to');
      });

      test('unknown paths are 404, wrong methods 405, a foreign Host header 403', async () => {
        expect((await get(c, '/nope')).status).toBe(404);
        expect((await get(c, '/dlq/redrive')).status).toBe(405);
        expect((await get(c, '/messages', { method: 'POST' })).status).toBe(405);
        expect((await get(c, '/messages', { method: 'PUT' })).status).toBe(405);
        const rebound = await get(c, '/', { headers: { host: 'evil.example:80' } });
        expect(rebound.status).toBe(403);
        expect(rebound.body).toContain('does not name this console');
      });
    });

    describe('with --allow-writes', () => {
      let c: ConsoleFixture;
      beforeAll(async () => {
        c = await consoleFixture(factory, { allowWrites: true });
      }, HOOK_MS);
      afterAll(() => c.stop(), HOOK_MS);

      test('reading needs no sign-in; a wrong token is refused and logged', async () => {
        expect((await get(c, '/')).status).toBe(200);
        const res = await post(c, '/login', [['token', 'not-the-token-at-all']]);
        expect(res.status).toBe(403);
        expect(res.body).toContain('That is not the token');
        expect(res.headers.get('set-cookie')).toBeNull();
        expect(c.logs.some((l) => l.includes('failed sign-in'))).toBe(true);
      });

      test('a redrive needs a session, the CSRF token and this origin', async () => {
        const noSession = await post(c, '/dlq/redrive', [
          ['ids', 'E0003'],
          ['csrf', 'x'],
        ]);
        expect(noSession.status).toBe(403);
        expect(noSession.body).toContain('sign in');
        const { cookie, csrf } = await signIn(c);
        const noCsrf = await post(c, '/dlq/redrive', [['ids', 'E0003']], { cookie });
        expect(noCsrf.status).toBe(403);
        expect(noCsrf.body).toContain('CSRF');
        const wrongCsrf = await post(
          c,
          '/dlq/redrive',
          [
            ['ids', 'E0003'],
            ['csrf', `${csrf}x`],
          ],
          { cookie },
        );
        expect(wrongCsrf.status).toBe(403);
        const foreign = await post(
          c,
          '/dlq/redrive',
          [
            ['ids', 'E0003'],
            ['csrf', csrf],
          ],
          {
            cookie,
            origin: 'http://evil.example',
          },
        );
        expect(foreign.status).toBe(403);
        expect(foreign.body).toContain('not from this console');
        const forged = await post(
          c,
          '/dlq/redrive',
          [
            ['ids', 'E0003'],
            ['csrf', csrf],
          ],
          { cookie: 'onceq_console=forged' },
        );
        expect(forged.status).toBe(403);
        expect((await show(c.store, 'E0003')).state).toBe('dead');
        expect(c.logs.some((l) => l.includes('redrive by'))).toBe(false);
      });

      test('preview then redrive: exactly the confirmed ids, logged; a second try is refused', async () => {
        const { cookie, csrf } = await signIn(c);
        const preview = await get(c, '/dlq/preview?scope=all&handler=v2', { headers: { cookie } });
        expect(preview.body).toContain('Redrive the 2 messages v2 would accept');
        const form =
          /<form method="post" action="\/dlq\/redrive">([\s\S]*?)<\/form>/.exec(
            preview.body,
          )?.[1] ?? '';
        const ids = [...form.matchAll(/name="ids" value="([^"]+)"/g)].map((m) => m[1]);
        expect(ids).toEqual(['E0003', 'E0004']);
        expect(form).toContain(`name="csrf" value="${csrf}"`);
        const done = await post(
          c,
          '/dlq/redrive',
          [
            ['csrf', csrf],
            ['handler', 'v2'],
            ['ids', 'E0003'],
            ['ids', 'E0004'],
          ],
          { cookie },
        );
        expect(done.status).toBe(200);
        expect(done.body).toContain('Redriven <strong>2</strong> messages: E0003, E0004');
        expect((await show(c.store, 'E0003')).state).toBe('ready');
        expect((await show(c.store, 'E0005')).state).toBe('dead');
        expect(
          c.logs.some((l) =>
            /redrive by session \S+ from \S+: 2 messages \(previewed with v2\): E0003, E0004/.test(
              l,
            ),
          ),
        ).toBe(true);
        const dlq = await get(c, '/dlq');
        expect(rowIds(dlq.body).sort()).toEqual(['E0005', 'E0006']);
        const overview = await get(c, '/overview/live');
        expect(overview.body).toContain('data-testid="count-dead">2<');
        // All or nothing: E0003 is no longer dead, so the whole call is refused.
        const again = await post(
          c,
          '/dlq/redrive',
          [
            ['csrf', csrf],
            ['ids', 'E0005'],
            ['ids', 'E0003'],
          ],
          { cookie },
        );
        expect(again.status).toBe(409);
        expect(again.body).toContain('E0003 is ready');
        expect((await show(c.store, 'E0005')).state).toBe('dead');
        expect(c.logs.some((l) => l.includes('refused'))).toBe(true);
      });

      test('sign-out ends the session', async () => {
        const { cookie, csrf } = await signIn(c);
        const out = await post(c, '/logout', [['csrf', csrf]], { cookie });
        expect(out.status).toBe(303);
        const after = await post(
          c,
          '/dlq/redrive',
          [
            ['ids', 'E0006'],
            ['csrf', csrf],
          ],
          { cookie },
        );
        expect(after.status).toBe(403);
      });
    });

    describe('with an operator token', () => {
      let c: ConsoleFixture;
      beforeAll(async () => {
        c = await consoleFixture(factory, { token: 'operator-token-0123456789' });
      }, HOOK_MS);
      afterAll(() => c.stop(), HOOK_MS);

      test('every page but the sign-in page needs the token', async () => {
        for (const path of ['/', '/messages', '/messages/E0001', '/dlq', '/overview/live']) {
          const res = await get(c, path);
          expect({ path, status: res.status }).toEqual({ path, status: 303 });
          expect(res.headers.get('location')).toStartWith('/login?next=');
        }
        expect((await get(c, '/login')).status).toBe(200);
        const { cookie } = await signIn(c);
        expect((await get(c, '/', { headers: { cookie } })).status).toBe(200);
        // Read-only still: the token opens the pages, not the writes.
        const { csrf } = await signIn(c);
        const write = await post(
          c,
          '/dlq/redrive',
          [
            ['ids', 'E0003'],
            ['csrf', csrf],
          ],
          { cookie },
        );
        expect(write.status).toBe(403);
        expect(write.body).toContain('read-only');
      });
    });

    describe('queues', () => {
      let c: ConsoleFixture;
      beforeAll(async () => {
        c = await consoleFixture(factory);
        await enqueue(
          c.store,
          batch(line('E2001', paid('book', 100)), line('E2002', paid('toy', 300))),
          { queue: 'payments' },
        );
        await work(c.store, handlers.v1, { queues: ['payments'] });
      }, HOOK_MS);
      afterAll(() => c.stop(), HOOK_MS);

      const QUEUE_HEADER = '<th scope="col">Queue</th>';

      test('the lists filter by queue= and show a queue column when a message is not in default', async () => {
        const first = await get(c, '/messages');
        expect(rowIds(first.body)).not.toContain('E2001');
        expect(first.body).not.toContain(QUEUE_HEADER);
        const payments = await get(c, '/messages?queue=payments');
        expect(rowIds(payments.body)).toEqual(['E2001', 'E2002']);
        expect(payments.body).toContain(QUEUE_HEADER);
        expect(payments.body).toContain('<td class="mono">payments</td>');
        const dlq = await get(c, '/dlq?queue=payments');
        expect(rowIds(dlq.body)).toEqual(['E2002']);
        expect(dlq.body).toContain('<input type="hidden" name="queue" value="payments">');
        const all = await get(c, '/dlq');
        expect(rowIds(all.body).sort()).toEqual([...DEAD_IDS, 'E2002']);
        expect(all.body).toContain(QUEUE_HEADER);
        const none = await get(c, '/dlq?queue=refunds');
        expect(none.body).toContain('No dead messages match this filter.');
      });

      test("a preview of all matching queue= judges that queue's dead messages only", async () => {
        const preview = await get(c, '/dlq/preview?scope=all&handler=v2&queue=payments');
        expect(preview.status).toBe(200);
        expect(preview.body).toContain('<strong>1 of 1</strong> would now be accepted');
      });

      test('a bad queue= answers 400 naming the parameter', async () => {
        const bad = await get(c, '/messages?queue=pay%2Fments');
        expect(bad.status).toBe(400);
        expect(bad.body).toContain('queue must be 1 to 64 letters');
        expect(bad.body).toContain('id="err-queue"');
      });
    });
  });
}

forEachBackend('console over HTTP', runOn);

onPostgres('console on PostgreSQL hides the password', () =>
  test(
    'console on PostgreSQL: the password of the URL is never on a page',
    async () => {
      const url = new URL(process.env.DATABASE_URL as string);
      const password = 'console-pw-never-shown';
      url.password = password;
      const saved = process.env.DATABASE_URL;
      process.env.DATABASE_URL = url.toString();
      try {
        const c = await consoleFixture(postgresFactory);
        try {
          for (const path of [
            '/',
            '/messages',
            '/dlq',
            '/messages/E0001',
            '/nope',
            '/messages?limit=0',
          ]) {
            const res = await get(c, path);
            expect(res.body).not.toContain(password);
          }
          expect((await get(c, '/')).body).toContain(`${url.username}:***@`);
        } finally {
          await c.stop();
        }
      } finally {
        process.env.DATABASE_URL = saved;
      }
    },
    PROCESS_MS,
  ),
);

/** Starts `onceq console --json …` and resolves with its first stdout line (the start-up facts). */
async function startCli(args: string[], cwd: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', BIN, 'console', '--port', '0', '--json', ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const reader = proc.stdout.getReader();
  let text = '';
  const deadline = Date.now() + 30_000;
  while (!text.includes('\n') && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { proc, first: text.split('\n')[0] as string };
}

describe('the onceq console process', () => {
  let box: CliSandbox;
  beforeAll(() => {
    box = cliSandbox();
  }, HOOK_MS);
  afterAll(() => box.cleanup(), HOOK_MS);

  test(
    'serves the store, logs writes on stderr and stops cleanly on SIGTERM',
    async () => {
      expect((await box.run(['enqueue', DEMO_JSONL])).code).toBe(0);
      expect((await box.run(['work'])).code).toBe(0);
      const { proc, first } = await startCli(['--allow-writes'], box.cwd);
      try {
        const facts = JSON.parse(first) as { url: string; token: string; allow_writes: boolean };
        expect(facts.url).toStartWith('http://127.0.0.1:');
        expect(facts.allow_writes).toBe(true);
        expect(facts.token.length).toBeGreaterThanOrEqual(16);
        const res = await fetch(`${facts.url}/dlq`);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('name="ids" value="E0004"');
        const login = await fetch(`${facts.url}/login`, {
          method: 'POST',
          redirect: 'manual',
          headers: { origin: facts.url },
          body: new URLSearchParams([['token', facts.token]]),
        });
        expect(login.status).toBe(303);
      } finally {
        proc.kill('SIGTERM');
      }
      expect(await proc.exited).toBe(0);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain('onceq console: signed in: session');
    },
    PROCESS_MS,
  );

  test(
    'bad flags and a taken port are one sentence and exit 2 (nothing opened)',
    async () => {
      const cases: [string[], string][] = [
        [['console', '--port', '70000'], '--port must be a whole number from 0 to 65535'],
        [['console', '--port', '-1'], 'flag --port needs a value'],
        [['console', '--token', 'short'], '--token must be at least 16 characters'],
        [['console', '--hide-fields', 'a,,b'], '--hide-fields takes field names'],
        [['console', '--host', 'bad host'], '--host must be a host name'],
        [['console', 'extra'], 'unexpected argument'],
      ];
      for (const [args, message] of cases) {
        const err: string[] = [];
        const ctx: Context = {
          cwd: box.cwd,
          env: {},
          out: () => {},
          err: (l) => err.push(l),
          readStdin: async () => new Uint8Array(),
          waitForLine: async () => {},
          progress: null,
          interactive: false,
          prompter: () => Promise.reject(new Error('no prompts here')),
        };
        const code = await runCli(['--db', join(box.cwd, 'never.db'), ...args], ctx);
        expect({ args, code }).toEqual({ args, code: 2 });
        expect(err.length).toBe(1);
        expect(err[0]).toStartWith('onceq: ');
        expect(err[0]).toContain(message);
      }
      expect(existsSync(join(box.cwd, 'never.db'))).toBe(false);
      const env: Context['env'] = { ONCEQ_CONSOLE_TOKEN: 'too short' };
      const err: string[] = [];
      const code = await runCli(['console'], {
        cwd: box.cwd,
        env,
        out: () => {},
        err: (l) => err.push(l),
        readStdin: async () => new Uint8Array(),
        waitForLine: async () => {},
        progress: null,
        interactive: false,
        prompter: () => Promise.reject(new Error('no prompts')),
      });
      expect(code).toBe(2);
      expect(err[0]).toContain('ONCEQ_CONSOLE_TOKEN must be at least 16 characters');
      const blocker = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
      try {
        const res = await box.run(['console', '--port', String(blocker.port)]);
        expect(res.code).toBe(2);
        expect(res.stderr.trim()).toBe(
          `onceq: port ${blocker.port} on 127.0.0.1 is in use by another process; choose another with --port`,
        );
      } finally {
        await blocker.stop(true);
      }
    },
    PROCESS_MS,
  );

  test(
    'bound beyond this machine without a token it warns loudly',
    async () => {
      const { proc, first } = await startCli(['--host', '0.0.0.0'], box.cwd);
      proc.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
      expect(JSON.parse(first).url).toStartWith('http://0.0.0.0:');
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain('WARNING: the console listens on 0.0.0.0');
    },
    PROCESS_MS,
  );
});

test('the live overview reads the store once per second of its clock, however often pages poll', async () => {
  const clock = testClock(CONSOLE_T0);
  const opened = await sqliteFactory.open(clock);
  // Every read of the overview is a `store.read` (one snapshot statement): count those.
  let queries = 0;
  const read: Store['read'] = (fn) => {
    queries++;
    return opened.store.read(fn);
  };
  const counted: Store = { ...opened.store, read };
  const running = startConsole({ store: counted, port: 0, log: () => {} });
  const poll = (n: number) =>
    Promise.all(
      Array.from({ length: n }, () => fetch(`${running.url}/overview/live`).then((r) => r.text())),
    );
  try {
    // One page alone: what one uncached read of the overview costs, in queries.
    expect(await (await fetch(`${running.url}/overview/live`)).text()).toContain('count-dead');
    const oneRead = queries;
    expect(oneRead).toBeGreaterThan(0);
    // Ten pages polling within the same second of the store's clock: no read at all.
    queries = 0;
    for (const body of await poll(10)) expect(body).toContain('data-testid="count-dead">0<');
    expect(queries).toBe(0);
    // The clock moves one second: the next ten polls cost exactly one read between them.
    clock.advance(1);
    await poll(10);
    expect(queries).toBe(oneRead);
  } finally {
    await running.stop();
    await opened.cleanup();
  }
});
