// The worker's human log is one line per event whatever a handler's error quotes: a
// payload value with a newline must not forge a line, a bidi control must not reorder
// one. The JSON log escapes them by construction. A unit test of the log, and a real
// `onceq worker` whose handler quotes a payload value in its failure.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { enqueue, show } from '@onceq/core';
import { createLog } from '@onceq/core/service';
import {
  QUOTING_HANDLER,
  type SharedStore,
  sharedStore,
  startWorker,
} from '../support/worker-process.ts';

setDefaultTimeout(120_000);

const FORGED = '2026-01-01T00:00:00.000Z batch: claimed 100: 100 done';
const AT = () => new Date('2026-12-01T10:00:00.000Z');

describe('the human log escapes control characters', () => {
  test('a newline, a carriage return, a tab, NUL, C1, a line separator and bidi controls become visible escapes', () => {
    const lines: string[] = [];
    const log = createLog('human', (line) => lines.push(line), AT);
    log.write(
      'dead',
      `E0001 went to the DLQ: bad: x\n${FORGED}\r\t\u0000\u0085\u2028 \u202eamount 100\u202c \u2066a\u2069`,
    );
    expect(lines).toEqual([
      `2026-12-01T10:00:00.000Z dead: E0001 went to the DLQ: bad: x\\n${FORGED}\\r\\t\\u0000\\u0085\\u2028 \\u202eamount 100\\u202c \\u2066a\\u2069`,
    ]);
  });

  test('plain text, quotes, backslashes and other Unicode pass unchanged; the JSON log keeps the value exactly', () => {
    const human: string[] = [];
    createLog('human', (line) => human.push(line), AT).write('batch', 'claimed 2: "é" \\ 💶 ok');
    expect(human).toEqual(['2026-12-01T10:00:00.000Z batch: claimed 2: "é" \\ 💶 ok']);
    const json: string[] = [];
    const message = `x\n${FORGED}\u202e`;
    createLog('json', (line) => json.push(line), AT).write('dead', message, { code: 'bad' });
    expect(json).toHaveLength(1);
    expect(json[0]).not.toContain('\n');
    expect(JSON.parse(json[0] as string)).toMatchObject({ event: 'dead', message, code: 'bad' });
  });
});

describe('sqlite: onceq worker with a handler whose failure quotes the payload', () => {
  let shared: SharedStore;
  beforeEach(async () => {
    shared = await sharedStore('sqlite');
  });
  afterEach(async () => {
    await shared.cleanup();
  });

  test('the dead message is one log line; no line is forged', async () => {
    const note = `x\n${FORGED}`;
    await enqueue(
      shared.store,
      `${JSON.stringify({ event_id: 'E0001', payload: { category: 'book', amount_cents: 1, note } })}\n`,
    );
    const w = startWorker(['--db', shared.db, '--handler', QUOTING_HANDLER], shared.cwd);
    await w.waitForLog(/dead: E0001 went to the DLQ/);
    w.signal('SIGTERM');
    expect(await w.exited()).toBe(0);
    const lines = w.stderr().split('\n');
    expect(lines.filter((l) => l.includes('went to the DLQ'))).toEqual([
      expect.stringMatching(
        / dead: E0001 went to the DLQ: bad_note: cannot use note x\\n2026-01-01T00:00:00\.000Z batch: claimed 100: 100 done$/,
      ),
    ]);
    expect(lines.some((l) => l.startsWith('2026-01-01T00:00:00.000Z'))).toBe(false);
    // The store keeps the detail as the handler wrote it.
    expect((await show(shared.store, 'E0001')).lastErrorDetail).toBe(`cannot use note ${note}`);
  });
});
