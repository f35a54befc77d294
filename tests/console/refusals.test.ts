// What a loopback console refuses, over HTTP against a real console (and the worker's
// metrics port): Host names a DNS-rebinding page sends, malformed requests, repeated
// failed sign-ins, weak tokens, bodies that are not forms, bad percent-encoding, a
// `next` that cannot be a Location, a handler name that is not a handler; and what it
// accepts that it used to refuse: ids of up to 200 characters, a preview of a page of
// 500 selected ids. Each refusal shows nothing of the store.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startConsole, WeakTokenError } from '@onceq/console';
import { enqueue, show, work } from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { forEachBackend } from '../support/backends.ts';
import { cliSandbox } from '../support/cli.ts';
import { type ConsoleFixture, consoleFixture } from '../support/console.ts';
import {
  type BackendFactory,
  batch,
  line,
  paid,
  sqliteFactory,
  testClock,
} from '../support/factories.ts';
import { getWithHost, rawRequest } from '../support/raw-http.ts';
import { startWorker } from '../support/worker-process.ts';

const HOOK_MS = 60_000;
const PROCESS_MS = 120_000;

const portOf = (c: { url: string }) => Number(new URL(c.url).port);

/** Nothing of the store: not its location, nor a part of it (path, host, port, database, user). */
function expectNothingOfTheStore(body: string, c: ConsoleFixture): void {
  expect(body).not.toContain(c.store.location);
  if (c.target.startsWith('postgres')) {
    const url = new URL(c.target);
    expect(body).not.toContain(`${url.hostname}:${url.port}`);
    expect(body).not.toContain(url.pathname.slice(1));
    if (url.username !== '') expect(body).not.toContain(url.username);
  } else {
    expect(body).not.toContain(c.target);
  }
  expect(body).not.toContain('"category"');
}

function formBody(fields: [string, string][]): string {
  return new URLSearchParams(fields).toString();
}

async function post(
  c: ConsoleFixture,
  path: string,
  body: string,
  headers: Record<string, string> = {},
  localAddress = '127.0.0.1',
) {
  const all: Record<string, string> = {
    Host: new URL(c.url).host,
    Origin: c.url,
    'Content-Type': 'application/x-www-form-urlencoded',
    ...headers,
  };
  const head = [`POST ${path} HTTP/1.1`, ...Object.entries(all).map(([k, v]) => `${k}: ${v}`)];
  return rawRequest(portOf(c), head.join('\r\n'), body, localAddress);
}

async function signIn(c: ConsoleFixture): Promise<{ cookie: string; csrf: string }> {
  const res = await post(
    c,
    '/login',
    formBody([
      ['token', c.token as string],
      ['next', '/dlq'],
    ]),
  );
  expect(res.status).toBe(303);
  const cookie = (res.headers['set-cookie'] ?? '').split(';')[0] as string;
  const page = await getWithHost(portOf(c), '/dlq', new URL(c.url).host, [`Cookie: ${cookie}`]);
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
  expect(csrf).toBeDefined();
  return { cookie, csrf };
}

const REBINDING_HOSTS = (port: number) => [
  '127.0.0.1.evil.example',
  '127.evil.example',
  `127.0.0.1.nip.io:${port}`,
  'evil.example',
  `127.0.0.1.evil.example:${port}`,
  'localhost.evil.example',
];

function runOn(factory: BackendFactory) {
  describe(`the console on ${factory.name} refuses`, () => {
    let c: ConsoleFixture;
    beforeAll(async () => {
      c = await consoleFixture(factory, { allowWrites: true });
    }, HOOK_MS);
    afterAll(() => c.stop(), HOOK_MS);

    test('a Host a rebinding page sends: 403 with nothing of the store or of a payload', async () => {
      const port = portOf(c);
      for (const host of REBINDING_HOSTS(port)) {
        for (const path of ['/messages/E0003', '/', '/dlq', '/nosuch']) {
          const res = await getWithHost(port, path, host);
          expect({ host, path, status: res.status }).toEqual({ host, path, status: 403 });
          expectNothingOfTheStore(res.body, c);
        }
      }
      for (const host of ['127.0.0.1', `127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
        const res = await getWithHost(port, '/messages/E0003', host);
        expect({ host, status: res.status }).toEqual({ host, status: 200 });
        expect(res.body).toContain('toy');
      }
    });

    test('a write through a rebinding Host, with a valid session: refused, nothing changes', async () => {
      const { cookie, csrf } = await signIn(c);
      const evil = `127.0.0.1.nip.io:${portOf(c)}`;
      const res = await rawRequest(
        portOf(c),
        [
          'POST /dlq/redrive HTTP/1.1',
          `Host: ${evil}`,
          `Origin: http://${evil}`,
          `Cookie: ${cookie}`,
          'Content-Type: application/x-www-form-urlencoded',
        ].join('\r\n'),
        formBody([
          ['csrf', csrf],
          ['handler', 'v2'],
          ['ids', 'E0003'],
        ]),
      );
      expect(res.status).toBe(403);
      expectNothingOfTheStore(res.body, c);
      expect((await show(c.store, 'E0003'))?.state).toBe('dead');
    });

    test('malformed requests: 400, plain, no paths or source', async () => {
      const port = portOf(c);
      for (const host of [null, '127.0.0.1@evil.example', '']) {
        const res = await getWithHost(port, '/', host);
        expect({ host, status: res.status }).toEqual({ host, status: 400 });
        expect(res.body.length).toBeLessThan(200);
        expect(res.body).not.toContain(process.cwd());
        expect(res.body).not.toMatch(/\.ts\b|node_modules|at .*:\d+/);
        expectNothingOfTheStore(res.body, c);
      }
    });
  });
}

forEachBackend('console refusals', runOn);

describe('the console answers 400, not 500', () => {
  let c: ConsoleFixture;
  beforeAll(async () => {
    c = await consoleFixture(sqliteFactory, { allowWrites: true });
  }, HOOK_MS);
  afterAll(() => c.stop(), HOOK_MS);

  test('for a bad percent-encoding in a path', async () => {
    const res = await getWithHost(portOf(c), '/messages/E00%ZZ', new URL(c.url).host);
    expect(res.status).toBe(400);
    expect(res.body).toContain('percent-encoding');
  });

  test('for a JSON or text body where a form is expected', async () => {
    for (const type of ['application/json', 'text/plain']) {
      const res = await post(c, '/login', '{"token":"x"}', { 'Content-Type': type });
      expect({ type, status: res.status }).toEqual({ type, status: 400 });
      expect(res.body).toContain('takes a form');
    }
    const { cookie } = await signIn(c);
    const res = await post(c, '/dlq/redrive', 'ids=E0003', {
      'Content-Type': 'text/plain',
      Cookie: cookie,
    });
    expect(res.status).toBe(400);
  });

  test('for a next holding CR, LF or NUL: the session is delivered, the redirect goes home', async () => {
    for (const next of ['/dlq\r\nSet-Cookie: x=1', '/dlq\n', '/dlq\u0000']) {
      const res = await post(
        c,
        '/login',
        formBody([
          ['token', c.token as string],
          ['next', next],
        ]),
      );
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/');
      expect(res.headers['set-cookie']).toContain('onceq_console=');
    }
  });

  test('for a handler that is not a known handler: nothing redriven, no log line forged', async () => {
    const { cookie, csrf } = await signIn(c);
    const before = c.logs.length;
    const res = await post(
      c,
      '/dlq/redrive',
      formBody([
        ['csrf', csrf],
        ['handler', 'v2\nonceq console: redrive by session admin'],
        ['ids', 'E0003'],
      ]),
      { Cookie: cookie },
    );
    expect(res.status).toBe(400);
    expect(res.body).toContain('unknown handler');
    expect((await show(c.store, 'E0003'))?.state).toBe('dead');
    expect(c.logs.slice(before).join('\n')).not.toContain('redrive by session admin');
  });
});

describe('sign-in', () => {
  test(
    'ten failed sign-ins from one address: 429 with Retry-After, then the window passes',
    async () => {
      const c = await consoleFixture(sqliteFactory, { allowWrites: true });
      try {
        const wrong = formBody([
          ['token', 'not-the-token-at-all'],
          ['next', '/'],
        ]);
        for (let i = 0; i < 10; i++) expect((await post(c, '/login', wrong)).status).toBe(403);
        const right = formBody([
          ['token', c.token as string],
          ['next', '/'],
        ]);
        const limited = await post(c, '/login', right);
        expect(limited.status).toBe(429);
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
        expect(limited.body).toContain('too many failed sign-ins from this address');
        expect(limited.headers['set-cookie']).toBeUndefined();
        // Another client is not held back by the first one's failures.
        expect((await post(c, '/login', right, {}, '127.0.0.2')).status).toBe(303);
        c.clock.advance(61);
        expect((await post(c, '/login', right)).status).toBe(303);
      } finally {
        await c.stop();
      }
    },
    PROCESS_MS,
  );

  test(
    'a token of one repeated character, a short cycle or a run is refused with a sentence',
    async () => {
      const opened = await sqliteFactory.open(testClock());
      try {
        for (const token of [
          'aaaaaaaaaaaaaaaa',
          'abababababababab',
          'abcdabcdabcdabcd',
          'abcdefghijklmnop',
          '0123456789abcdef',
          'qwertyuiqwertyui',
        ]) {
          expect(() => startConsole({ store: opened.store, port: 0, token })).toThrow(
            WeakTokenError,
          );
        }
        const sandbox = cliSandbox();
        try {
          const res = await sandbox.run(['console', '--port', '0', '--token', 'aaaaaaaaaaaaaaaa']);
          expect(res.code).toBe(2);
          expect(res.stderr.trim()).toBe(
            'onceq: --token is too easy to guess (it repeats a few characters or runs in order): use at least 16 random characters, e.g. the output of openssl rand -base64 24',
          );
        } finally {
          sandbox.cleanup();
        }
      } finally {
        await opened.cleanup();
      }
    },
    PROCESS_MS,
  );
});

describe('the DLQ takes every id a store can hold', () => {
  test(
    'an id of 101 to 200 characters is previewed and redriven',
    async () => {
      const clock = testClock();
      const opened = await sqliteFactory.open(clock, GENERAL_POLICY);
      const ids = [`L${'x'.repeat(100)}`, `M${'y'.repeat(199)}`];
      await enqueue(opened.store, batch(...ids.map((id) => line(id, paid('toy', 100)))));
      await work(opened.store, handlers.v1);
      const running = startConsole({
        store: opened.store,
        port: 0,
        allowWrites: true,
        log: () => {},
      });
      const c = {
        url: running.url,
        token: running.token,
        logs: [],
        store: opened.store,
        target: opened.target,
        clock,
        stop: async () => {},
      } as ConsoleFixture;
      try {
        const { cookie, csrf } = await signIn(c);
        const res = await post(
          c,
          '/dlq/redrive',
          formBody([
            ['csrf', csrf],
            ['handler', 'v2'],
            ...ids.map((id): [string, string] => ['ids', id]),
          ]),
          { Cookie: cookie },
        );
        expect(res.status).toBe(200);
        expect(res.body).toContain('Redriven <strong>2</strong>');
        for (const id of ids) expect((await show(opened.store, id))?.state).toBe('ready');
      } finally {
        await running.stop();
        await opened.cleanup();
      }
    },
    PROCESS_MS,
  );

  test(
    'preview of a whole selected page of 500 UUID ids is a form post, not a 431',
    async () => {
      const clock = testClock();
      const opened = await sqliteFactory.open(clock, GENERAL_POLICY);
      const ids = Array.from({ length: 500 }, () => crypto.randomUUID());
      await enqueue(opened.store, batch(...ids.map((id) => line(id, paid('toy', 100)))));
      await work(opened.store, handlers.v1);
      const running = startConsole({ store: opened.store, port: 0, log: () => {} });
      try {
        const host = new URL(running.url).host;
        const page = await getWithHost(Number(new URL(running.url).port), '/dlq?limit=500', host);
        expect(page.body).toContain('<form method="post" action="/dlq/preview"');
        const body = formBody([
          ['scope', 'selected'],
          ['handler', 'v2'],
          ...ids.map((id): [string, string] => ['ids', id]),
        ]);
        const res = await rawRequest(
          Number(new URL(running.url).port),
          [
            `POST /dlq/preview HTTP/1.1`,
            `Host: ${host}`,
            `Origin: ${running.url}`,
            'Content-Type: application/x-www-form-urlencoded',
          ].join('\r\n'),
          body,
        );
        expect(res.status).toBe(200);
        expect(res.body).toContain('<strong>500 of 500</strong>');
      } finally {
        await running.stop();
        await opened.cleanup();
      }
    },
    PROCESS_MS,
  );
});

describe("the worker's metrics port", () => {
  test(
    'malformed requests: 400, no paths or source, and the JSON log stays one object a line',
    async () => {
      const sandbox = cliSandbox();
      const db = `${sandbox.cwd}/q.db`;
      try {
        expect((await sandbox.run(['enqueue', '--db', db, '-'], { stdin: '' })).code).toBeLessThan(
          5,
        );
        const worker = startWorker(
          ['--db', db, '--metrics-port', '0', '--log-format', 'json'],
          sandbox.cwd,
        );
        await worker.waitForLog(/"port":\d+/);
        const port = Number(/"port":(\d+)/.exec(worker.stderr())?.[1]);
        for (const host of [null, '127.0.0.1@evil.example', '']) {
          const res = await getWithHost(port, '/metrics', host);
          expect({ host, status: res.status }).toEqual({ host, status: 400 });
          expect(res.body).not.toContain(process.cwd());
          expect(res.body).not.toMatch(/\.ts\b|node_modules/);
        }
        expect((await getWithHost(port, '/healthz', `127.0.0.1:${port}`)).status).toBe(200);
        worker.signal('SIGTERM');
        expect(await worker.exited()).toBe(0);
        // Every line is one JSON object: the worker's log, nothing else.
        const lines = worker
          .stderr()
          .split('\n')
          .filter((x) => x !== '' && !x.startsWith('creating a new store'));
        for (const l of lines) expect(() => JSON.parse(l)).not.toThrow();
      } finally {
        sandbox.cleanup();
      }
    },
    PROCESS_MS,
  );
});
