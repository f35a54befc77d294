/**
 * What a rejected JSONL envelope says, exactly: the byte and line named for invalid UTF-8 (after valid sequences at both ends of every
 * UTF-8 range), the counts in the file-level sentences, and how a wrong value's kind
 * and a long key are named, and that every bad line is named whatever its problem.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BatchIssue, BatchRejectedError } from '@onceq/core';
import { MAX_BATCH_LINES, parseBatch } from '@onceq/core/internal';
import fc from 'fast-check';
import { type CliSandbox, cliSandbox } from '../support/cli.ts';

const encoder = new TextEncoder();

function line(id: string, payload = '{"category":"book","amount_cents":10000}'): string {
  return `{"event_id":"${id}","payload":${payload}}`;
}

/** The error `input` is rejected with, failing the test if it is accepted. */
function rejectionOf(input: Uint8Array | string): BatchRejectedError {
  try {
    parseBatch(input);
  } catch (error) {
    expect(error).toBeInstanceOf(BatchRejectedError);
    return error as BatchRejectedError;
  }
  throw new Error('expected the batch to be rejected');
}

function issuesOf(input: Uint8Array | string): readonly BatchIssue[] {
  return rejectionOf(input).issues;
}

/**
 * Valid UTF-8 at both ends of every range (U+0080, U+07FF, U+0800, U+D7FF, U+E000,
 * U+FFFF, U+10000, U+40000, U+FFFFF, U+10FFFF), inside a payload string on line 2.
 */
const VALID_EDGES = [
  0xc2, 0x80, 0xdf, 0xbf, 0xe0, 0xa0, 0x80, 0xed, 0x9f, 0xbf, 0xee, 0x80, 0x80, 0xef, 0xbf, 0xbf,
  0xf0, 0x90, 0x80, 0x80, 0xf1, 0x80, 0x80, 0x80, 0xf3, 0xbf, 0xbf, 0xbf, 0xf4, 0x8f, 0xbf, 0xbf,
];

describe('invalid UTF-8: the first bad byte and its line, after valid sequences of every length', () => {
  const head = encoder.encode(`${line('E0001')}\n{"event_id":"E0002","payload":{"a":"`);
  const tail = encoder.encode('"}}');

  test('the valid edges alone are accepted', () => {
    const bytes = new Uint8Array([...head, ...VALID_EDGES, ...tail]);
    expect(parseBatch(bytes).entries).toHaveLength(2);
  });

  test.each([
    ['a lone continuation byte', [0x80]],
    ['continuation bytes without a lead', [0x80, 0x80, 0x80, 0x80]],
    ['an overlong lead before continuation bytes', [0xc1, 0x80, 0x80]],
    ['an overlong two-byte lead', [0xc1, 0xbf]],
    ['a two-byte lead before ASCII', [0xc2, 0x7f]],
    ['a two-byte lead before a lead', [0xc2, 0xc0]],
    ['an overlong three-byte form', [0xe0, 0x9f, 0xbf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a bad third byte (ASCII)', [0xe1, 0x80, 0x7f]],
    ['a bad third byte (a lead)', [0xe1, 0x80, 0xc0]],
    ['an overlong four-byte form', [0xf0, 0x8f, 0xbf, 0xbf]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['a lead byte that never starts UTF-8', [0xf5, 0x80, 0x80, 0x80]],
    ['a bad fourth byte', [0xf1, 0x80, 0x80, 0x7f]],
  ])('%s', (_name, bad) => {
    const bytes = new Uint8Array([...head, ...VALID_EDGES, ...bad, ...tail]);
    const at = head.length + VALID_EDGES.length + 1; // 1-based
    expect(issuesOf(bytes)).toEqual([
      { line: 2, reason: `invalid UTF-8 at byte ${at} of the file` },
    ]);
  });

  test.each([
    ['two-byte', [0xdf]],
    ['three-byte', [0xef, 0xbf]],
    ['four-byte', [0xf4, 0x8f, 0xbf]],
  ])('a %s sequence cut by the end of the file', (_name, cut) => {
    const bytes = new Uint8Array([...head, ...VALID_EDGES, ...cut]);
    const at = head.length + VALID_EDGES.length + 1;
    expect(issuesOf(bytes)).toEqual([
      { line: 2, reason: `invalid UTF-8 at byte ${at} of the file` },
    ]);
  });
});

describe('file-level sentences count what they say', () => {
  test('too many lines: the count is of non-empty lines, blank ones not included', () => {
    const lines = Array.from({ length: MAX_BATCH_LINES + 1 }, (_, i) =>
      line(`E${String(i).padStart(4, '0')}`),
    );
    const issues = issuesOf(lines.join('\n\n'));
    expect(issues).toEqual([
      {
        line: 0,
        reason: `the batch has ${MAX_BATCH_LINES + 1} non-empty lines, the limit is 1000`,
      },
    ]);
  });

  test('a capped list says "1 more problem" in the singular, and the error counts them all', () => {
    const text = Array.from({ length: 21 }, (_, i) => line(`bad${i}`)).join('\n');
    const error = rejectionOf(text);
    expect(error.issues).toHaveLength(21);
    expect(error.issues[20]).toEqual({ line: 0, reason: '… and 1 more problem' });
    expect(error.problems).toBe(21);
  });

  test('a capped list still counts every problem', () => {
    const text = Array.from({ length: 25 }, (_, i) => line(`bad${i}`)).join('\n');
    const error = rejectionOf(text);
    expect(error.issues).toHaveLength(21);
    expect(error.problems).toBe(25);
  });

  test('an uncapped list counts its problems too', () => {
    const text = [line('bad1'), line('bad2'), line('E0001')].join('\n');
    expect(rejectionOf(text).problems).toBe(2);
  });
});

describe('a wrong value is named by its kind', () => {
  test.each([
    ['true', 'a boolean'],
    ['1.5', 'a number'],
    ['7', 'a number'],
    ['null', 'null'],
    ['[]', 'an array'],
    ['{}', 'an object'],
  ])('event_id %s is %s', (value, kind) => {
    const issues = issuesOf(`{"event_id":${value},"payload":{}}`);
    expect(issues).toEqual([{ line: 1, reason: `event_id must be a string, not ${kind}` }]);
  });

  test.each([
    ['1.5', 'a number'],
    ['false', 'a boolean'],
    ['"x"', 'a string'],
  ])('payload %s is %s', (value, kind) => {
    const issues = issuesOf(`{"event_id":"E0001","payload":${value}}`);
    expect(issues).toEqual([{ line: 1, reason: `payload must be a JSON object, not ${kind}` }]);
  });
});

describe('an unexpected key is quoted, cut after 40 characters', () => {
  test('40 characters in full, 41 cut with an ellipsis', () => {
    const k40 = 'k'.repeat(40);
    const k41 = 'k'.repeat(41);
    expect(issuesOf(`{"event_id":"E0001","payload":{},"${k40}":1}`)[0]?.reason).toBe(
      `unexpected key "${k40}" (a line has exactly event_id and payload)`,
    );
    expect(issuesOf(`{"event_id":"E0001","payload":{},"${k41}":1}`)[0]?.reason).toBe(
      `unexpected key "${k40}…" (a line has exactly event_id and payload)`,
    );
  });
});

/** One line of each kind of problem, and a good one; `n` makes the event id unique. */
const LINE_KINDS = {
  good: (n: number) => line(`E${String(n).padStart(4, '0')}`),
  brokenJson: (n: number) => `{"event_id":"E${String(n).padStart(4, '0')}","payload":{`,
  badId: (n: number) => line(`E${String(n).padStart(4, '0')}:`),
  missingKey: (n: number) => `{"event_id":"E${String(n).padStart(4, '0')}"}`,
  payloadNotObject: (n: number) => line(`E${String(n).padStart(4, '0')}`, '[]'),
  hugeInteger: (n: number) => line(`E${String(n).padStart(4, '0')}`, `{"n":1${'0'.repeat(400)}}`),
  duplicateKey: (n: number) => line(`E${String(n).padStart(4, '0')}`, '{"a":1,"a":1}'),
} as const;
type LineKind = keyof typeof LINE_KINDS;

describe('a rejection names every bad line, whatever its kind of problem', () => {
  test('broken JSON on line 3 and a bad event_id on line 2: both lines named', () => {
    const text = [
      LINE_KINDS.good(1),
      LINE_KINDS.badId(262),
      LINE_KINDS.brokenJson(3),
      LINE_KINDS.good(4),
    ].join('\n');
    expect(issuesOf(text).map((i) => i.line)).toEqual([2, 3]);
  });

  test('any mix of good and bad lines: exactly the bad lines are named, in order', () => {
    const kinds = Object.keys(LINE_KINDS) as LineKind[];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 20 }), (mix) => {
        const text = mix.map((kind, i) => LINE_KINDS[kind](i + 1)).join('\n');
        const bad = mix.flatMap((kind, i) => (kind === 'good' ? [] : [i + 1]));
        if (bad.length === 0) {
          expect(parseBatch(text).entries).toHaveLength(mix.length);
        } else {
          const error = rejectionOf(text);
          expect(error.issues.map((i) => i.line)).toEqual(bad);
          expect(error.problems).toBe(bad.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('onceq enqueue names every bad line before it opens the store', () => {
  const text = `${[LINE_KINDS.good(1), LINE_KINDS.badId(262), LINE_KINDS.brokenJson(3)].join('\n')}\n`;
  let box: CliSandbox;
  afterEach(() => box.cleanup());

  test('a new store (the lesson policy): the event id on line 2 and the JSON on line 3; no store created', async () => {
    box = cliSandbox();
    writeFileSync(join(box.cwd, 'bad.jsonl'), text);
    for (const args of [
      ['enqueue', 'bad.jsonl'],
      ['enqueue', '--split', 'bad.jsonl'],
    ]) {
      const r = await box.run(args);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('(2 problems)');
      expect(r.stderr).toContain('  line 2: event_id "E0262:" must match');
      expect(r.stderr).toContain('  line 3: invalid JSON:');
    }
    expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
  });

  test('a store whose policy is general: line 2 fits it, only line 3 is named', async () => {
    box = cliSandbox();
    expect((await box.run(['id-policy', 'set', 'general'])).code).toBe(0);
    writeFileSync(join(box.cwd, 'bad.jsonl'), text);
    const r = await box.run(['enqueue', 'bad.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('(1 problem)');
    expect(r.stderr).toContain('  line 3: invalid JSON:');
    expect(r.stderr).not.toContain('line 2');
  });
});

describe('onceq enqueue --split names the bad lines of every chunk', () => {
  /** 2,500 good lines (three chunks), with the given lines replaced. */
  function file(replaced: Record<number, string>): string {
    const lines = Array.from({ length: 2500 }, (_, i) => {
      const n = i + 1;
      return replaced[n] ?? line(`E${String(n).padStart(4, '0')}`);
    });
    return `${lines.join('\n')}\n`;
  }
  let box: CliSandbox;
  afterEach(() => box.cleanup());

  test('broken JSON in chunk 1, an id the store refuses in chunk 2 (valid JSON), a missing key in chunk 3: all three named, nothing written', async () => {
    box = cliSandbox();
    writeFileSync(
      join(box.cwd, 'big.jsonl'),
      file({ 5: '{broken', 1500: line('E1:'), 2300: '{"event_id":"E2300"}' }),
    );
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('(3 problems)');
    expect(r.stderr).toContain('  line 5: invalid JSON:');
    expect(r.stderr).toContain('  line 1500: event_id "E1:" must match');
    expect(r.stderr).toContain('  line 2300: missing key "payload"');
    expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
  });

  test('more bad lines across chunks than a rejection lists: the first in file order, then how many more', async () => {
    box = cliSandbox();
    const bad: Record<number, string> = {};
    for (let n = 990; n <= 1014; n++) bad[n] = '{"event_id":"x"}'; // 25 bad lines over chunks 1 and 2
    bad[2400] = '{broken';
    writeFileSync(join(box.cwd, 'big.jsonl'), file(bad));
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('(26 problems)');
    const named = [...r.stderr.matchAll(/^ {2}line (\d+):/gm)].map((m) => Number(m[1]));
    expect(named).toEqual(Array.from({ length: 20 }, (_, i) => 990 + i));
    expect(r.stderr).toContain('… and 6 more problems');
  });
});
