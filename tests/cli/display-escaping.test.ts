// Text from outside (payload values, handler error messages, categories) is shown with
// its control characters and bidi controls escaped: in the console's pages and in the
// CLI's tables and lines. A newline in a handler's message cannot forge a line; a
// right-to-left override cannot make an amount 100 read 001.
import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { startConsole } from '@onceq/console';
import { enqueue, openStore, PermanentFailure, work } from '@onceq/core';
import { printable } from '@onceq/core/internal';
import { cliSandbox } from '../support/cli.ts';
import { batch, line, testClock } from '../support/factories.ts';
import { getWithHost } from '../support/raw-http.ts';

const RLO = '\u202e';
const FORGED = 'batch: 3 done, 0 retried, 0 dead';

describe('printable', () => {
  test('escapes controls, bidi controls and separators, nothing else', () => {
    expect(printable(`a\nb\r\tc\u0000\u007f\u009b`)).toBe('a\\nb\\r\\tc\\u0000\\u007f\\u009b');
    expect(printable(`${RLO}001\u2066x\u2069\u200f\u2028`)).toBe(
      '\\u202e001\\u2066x\\u2069\\u200f\\u2028',
    );
    expect(printable('plain text, ü € 🔑 "quoted"')).toBe('plain text, ü € 🔑 "quoted"');
    expect(printable('keeps\n\tlines\r', true)).toBe('keeps\n\tlines\\r');
  });
});

describe('a payload with bidi controls and a handler message with a newline', () => {
  test('the console and onceq dlq / list / show print them escaped', async () => {
    const box = cliSandbox();
    const db = join(box.cwd, 'q.db');
    const store = await openStore(db, { clock: testClock() });
    try {
      await enqueue(
        store,
        batch(line('E0001', { category: `${RLO}book`, amount_cents: 100, note: `x${RLO}001` })),
      );
      await work(store, (payload) => {
        throw new PermanentFailure(
          'invalid_payload',
          `bad note "${String(payload.note)}"\n${FORGED}`,
        );
      });
      const running = startConsole({ store, port: 0, log: () => {} });
      try {
        const port = Number(new URL(running.url).port);
        for (const path of ['/dlq', '/messages', '/messages/E0001']) {
          const page = await getWithHost(port, path, `127.0.0.1:${port}`);
          expect(page.status).toBe(200);
          expect({ path, raw: page.body.includes(RLO) }).toEqual({ path, raw: false });
          expect(page.body).toContain('\\u202ebook');
        }
      } finally {
        await running.stop();
      }
    } finally {
      await store.close();
    }
    try {
      for (const args of [['dlq'], ['list'], ['show', 'E0001']]) {
        const r = await box.run([...args, '--db', db]);
        expect(r.code).toBe(0);
        expect({ args, raw: r.stdout.includes(RLO) }).toEqual({ args, raw: false });
        expect(r.stdout.split('\n').some((l) => l.startsWith('batch:'))).toBe(false);
        expect(r.stdout).toContain('\\u202ebook');
      }
      const dlq = await box.run(['dlq', '--db', db]);
      expect(dlq.stdout).toContain(`E0001: bad note "x\\u202e001"\\n${FORGED}`);
    } finally {
      box.cleanup();
    }
  }, 120_000);
});
