import { describe, expect, test } from 'bun:test';
import { type BatchIssue, BatchRejectedError } from '@onceq/core';
import {
  MAX_BATCH_BYTES,
  MAX_BATCH_LINES,
  MAX_PAYLOAD_BYTES,
  parseBatch,
} from '@onceq/core/internal';

const encoder = new TextEncoder();

function line(id: string, payload = '{"category":"book","amount_cents":10000}'): string {
  return `{"event_id":"${id}","payload":${payload}}`;
}

function id(n: number): string {
  return `E${String(n).padStart(4, '0')}`;
}

/** The issues `input` is rejected with, failing the test if it is accepted. */
function issuesOf(input: Uint8Array | string): readonly BatchIssue[] {
  try {
    parseBatch(input);
  } catch (error) {
    expect(error).toBeInstanceOf(BatchRejectedError);
    expect((error as BatchRejectedError).exitCode).toBe(3);
    return (error as BatchRejectedError).issues;
  }
  throw new Error('expected the batch to be rejected');
}

/** A payload whose canonical form is exactly `bytes` bytes, padded with `fill`. */
function payloadOfBytes(bytes: number, fill = 'x'): string {
  const overhead = '{"p":""}'.length;
  const fillBytes = encoder.encode(fill).length;
  const count = (bytes - overhead) / fillBytes;
  if (!Number.isInteger(count)) throw new Error('bad size');
  return `{"p":"${fill.repeat(count)}"}`;
}

describe('parseBatch accepts a valid batch', () => {
  test('the demo input gives 4 entries and 1 duplicate', () => {
    const text = [
      line('E0001'),
      line('E0001'),
      line('E0002', '{"category":"pen","amount_cents":2000}'),
      line('E0003', '{"category":"book","amount_cents":5000}'),
      line('E0004', '{"category":"toy","amount_cents":3000}'),
    ].join('\n');
    const batch = parseBatch(encoder.encode(text));
    expect(batch.entries.map((e) => e.eventId)).toEqual(['E0001', 'E0002', 'E0003', 'E0004']);
    expect(batch.duplicates).toBe(1);
    expect(batch.lines).toBe(5);
    expect(batch.entries[0]).toEqual({
      line: 1,
      eventId: 'E0001',
      payload: '{"amount_cents":10000,"category":"book"}',
    });
  });

  test('stores payloads in canonical form', () => {
    const batch = parseBatch(line('E0001', '{ "b" : [1.0, 1e4], "a" : 12345678901234567890 }'));
    expect(batch.entries[0]?.payload).toBe('{"a":12345678901234567890,"b":[1.0,10000.0]}');
  });

  test('counts a reordered-but-equal payload as a duplicate, keeping the first line', () => {
    const batch = parseBatch(
      [line('E0001', '{"a":1,"b":2}'), line('E0001', '{ "b": 2, "a": 1 }')].join('\n'),
    );
    expect(batch.entries).toEqual([{ line: 1, eventId: 'E0001', payload: '{"a":1,"b":2}' }]);
    expect(batch.duplicates).toBe(1);
  });

  test('allows a BOM at the very start, CRLF line ends and blank lines; line numbers are physical', () => {
    const text = `\ufeff${line('E0001')}\r\n\r\n   \r\n\t\n${line('E0002')}\r\n`;
    const fromBytes = parseBatch(encoder.encode(text));
    expect(fromBytes.entries.map((e) => [e.line, e.eventId])).toEqual([
      [1, 'E0001'],
      [5, 'E0002'],
    ]);
    expect(fromBytes.lines).toBe(2);
    expect(parseBatch(text)).toEqual(fromBytes);
  });

  test('accepts the key order payload-first and whitespace inside a line', () => {
    const batch = parseBatch(' { "payload" : {} , "event_id" : "E9999" } ');
    expect(batch.entries).toEqual([{ line: 1, eventId: 'E9999', payload: '{}' }]);
  });
});

describe('parseBatch rejects bad lines', () => {
  test('names the line and reason of invalid JSON', () => {
    expect(issuesOf(`${line('E0001')}\n{"event_id":"E0002",`)).toEqual([
      { line: 2, reason: 'invalid JSON: unexpected end of input inside an object' },
    ]);
  });

  test('rejects a line that is not an object', () => {
    expect(issuesOf('[1,2]')[0]?.reason).toContain('must be a JSON object');
    expect(issuesOf('"E0001"')[0]?.reason).toContain('not a string');
  });

  test('rejects an extra key', () => {
    expect(issuesOf('{"event_id":"E0001","payload":{},"extra":1}')).toEqual([
      { line: 1, reason: 'unexpected key "extra" (a line has exactly event_id and payload)' },
    ]);
  });

  test('rejects a missing event_id or payload', () => {
    expect(issuesOf('{"payload":{}}')[0]?.reason).toContain('missing key "event_id"');
    expect(issuesOf('{"event_id":"E0001"}')[0]?.reason).toContain('missing key "payload"');
  });

  test('rejects an event_id that is not E followed by four digits', () => {
    expect(issuesOf(line('E12'))[0]?.reason).toBe(
      'event_id "E12" must match E followed by four digits (E0000 to E9999) under the store\'s id policy lesson',
    );
    for (const bad of [
      'E12345',
      'e0001',
      'E00a1',
      ' E0001',
      'E0001\\n',
      'E\u0661\u0662\u0663\u0664',
    ]) {
      expect(issuesOf(line(bad))[0]?.reason).toContain('must match E followed by four digits');
    }
  });

  test('rejects an event_id that is not a string', () => {
    expect(issuesOf('{"event_id":1,"payload":{}}')[0]?.reason).toBe(
      'event_id must be a string, not a number',
    );
  });

  test('rejects a payload that is not an object', () => {
    expect(issuesOf(line('E0001', '[1]'))[0]?.reason).toBe(
      'payload must be a JSON object, not an array',
    );
    expect(issuesOf(line('E0001', '"x"'))[0]?.reason).toContain('not a string');
    expect(issuesOf(line('E0001', 'null'))[0]?.reason).toContain('not null');
    expect(issuesOf(line('E0001', '1.5'))[0]?.reason).toContain('not a number');
  });

  test('rejects a duplicate key deep inside a payload', () => {
    expect(issuesOf(line('E0001', '{"a":{"b":{"c":1,"c":1}}}'))[0]?.reason).toBe(
      'invalid JSON: duplicate key "c"',
    );
  });

  test('rejects a duplicate envelope key even with the same value', () => {
    expect(issuesOf('{"event_id":"E0001","event_id":"E0001","payload":{}}')[0]?.reason).toBe(
      'invalid JSON: duplicate key "event_id"',
    );
  });

  test('rejects NaN, Infinity, overflowing numbers, lone surrogates and deep nesting in a line', () => {
    expect(issuesOf(line('E0001', '{"a":NaN}'))[0]?.reason).toContain('NaN is not allowed');
    expect(issuesOf(line('E0001', '{"a":Infinity}'))[0]?.reason).toContain('Infinity');
    expect(issuesOf(line('E0001', '{"a":1e999}'))[0]?.reason).toContain('overflows a double');
    expect(issuesOf(line('E0001', '{"a":"\\udc00"}'))[0]?.reason).toContain('lone surrogate');
    // The envelope is level 1 and the payload level 2, so 62 arrays inside reach level 64.
    const deep = `{"a":${'['.repeat(62)}${']'.repeat(62)}}`;
    expect(parseBatch(line('E0001', deep)).entries).toHaveLength(1);
    const deeper = `{"a":${'['.repeat(63)}${']'.repeat(63)}}`;
    expect(issuesOf(line('E0001', deeper))[0]?.reason).toBe(
      'invalid JSON: nesting deeper than 64 levels',
    );
  });

  test('survives a hostile 100k-deep line with a clean rejection', () => {
    const hostile = `{"event_id":"E0001","payload":${'['.repeat(100_000)}`;
    expect(issuesOf(hostile)[0]?.reason).toBe('invalid JSON: nesting deeper than 64 levels');
  });

  test('rejects a conflict, naming both line numbers', () => {
    const text = [
      line('E0001', '{"n":10000}'),
      line('E0002'),
      '',
      line('E0001', '{"n":10000.0}'),
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      {
        line: 4,
        reason: 'event_id E0001 conflicts with line 1: same event_id, different payload',
      },
    ]);
  });

  test('lists every bad line, not only the first', () => {
    const text = [line('E0001'), line('E1'), line('E0003'), '{"x":1}', line('E0005', '[]')].join(
      '\n',
    );
    expect(issuesOf(text).map((i) => i.line)).toEqual([2, 4, 5]);
  });

  test('names the line in the error message', () => {
    try {
      parseBatch(`${line('E0001')}\n\n${line('X')}`);
      throw new Error('not rejected');
    } catch (error) {
      expect((error as Error).message).toContain('line 3: event_id "X" must match');
    }
  });

  test('caps the issues at 20 and then says how many more', () => {
    const text = Array.from({ length: 25 }, (_, i) => line(`bad${i}`)).join('\n');
    const issues = issuesOf(text);
    expect(issues).toHaveLength(21);
    expect(issues[19]?.line).toBe(20);
    expect(issues[20]).toEqual({ line: 0, reason: '… and 5 more problems' });
  });

  test('does not add a "more" issue for exactly 20 problems', () => {
    const text = Array.from({ length: 20 }, (_, i) => line(`bad${i}`)).join('\n');
    expect(issuesOf(text)).toHaveLength(20);
  });
});

describe('parseBatch file-level limits', () => {
  test('rejects an empty batch: no non-empty line at all', () => {
    expect(issuesOf('')).toEqual([{ line: 0, reason: 'the batch has no events' }]);
    expect(issuesOf(new Uint8Array())).toEqual([{ line: 0, reason: 'the batch has no events' }]);
    expect(issuesOf('\ufeff\r\n  \n\t\n')).toEqual([
      { line: 0, reason: 'the batch has no events' },
    ]);
  });

  test('accepts exactly 1000 non-empty lines and rejects 1001', () => {
    const lines = Array.from({ length: MAX_BATCH_LINES }, (_, i) => line(id(i)));
    const ok = parseBatch(`${lines.join('\n')}\n\n\n`);
    expect(ok.lines).toBe(1000);
    expect(ok.entries).toHaveLength(1000);
    expect(issuesOf([...lines, line('E1000')].join('\n'))).toEqual([
      { line: 0, reason: 'the batch has 1001 non-empty lines, the limit is 1000' },
    ]);
  });

  test('counts duplicate lines towards the 1000-line limit', () => {
    const lines = Array.from({ length: MAX_BATCH_LINES + 1 }, () => line('E0001'));
    expect(issuesOf(lines.join('\n'))[0]?.reason).toContain('1001 non-empty lines');
  });

  test('accepts a batch of exactly 1,000,000 bytes and rejects 1,000,001', () => {
    // Valid lines, padded with trailing spaces (JSON whitespace) to hit the size exactly.
    const first = line('E0001', payloadOfBytes(9_000));
    const body = `${first}\n`;
    const pad = MAX_BATCH_BYTES - encoder.encode(body).length;
    const exact = `${body}${' '.repeat(pad)}`;
    expect(encoder.encode(exact).length).toBe(1_000_000);
    expect(parseBatch(encoder.encode(exact)).entries).toHaveLength(1);
    expect(parseBatch(exact).entries).toHaveLength(1);
    const over = `${exact} `;
    const expected = [{ line: 0, reason: 'the batch is 1000001 bytes, the limit is 1000000' }];
    expect(issuesOf(encoder.encode(over))).toEqual(expected);
    expect(issuesOf(over)).toEqual(expected);
  });

  test('measures a string batch in UTF-8 bytes, not characters', () => {
    // 500 lines of 1,000 "é" are 1,000,500 bytes, though far fewer than 1,000,000 characters.
    const big = `${line('E0001')}\n${`${'\u00e9'.repeat(1000)}\n`.repeat(500)}`;
    expect(issuesOf(big)[0]?.reason).toMatch(/^the batch is \d+ bytes, the limit is 1000000$/);
  });

  test('one line past the byte limit is named as the problem (splitting cannot help)', () => {
    const big = `${line('E0001')}\n${'\u00e9'.repeat(500_001)}`;
    expect(issuesOf(big)).toEqual([
      {
        line: 2,
        reason:
          'the line is more than 1000000 bytes, more than a whole batch may hold; a payload may hold at most 10000 bytes',
      },
    ]);
  });

  test('rejects invalid UTF-8, naming its line', () => {
    const good = encoder.encode(`${line('E0001')}\n`);
    const prefix = encoder.encode('{"event_id":"E0002","payload":{"a":"');
    const bad = new Uint8Array([...good, ...prefix, 0xff, ...encoder.encode('"}}')]);
    const at = good.length + prefix.length + 1; // 1-based
    expect(issuesOf(bad)).toEqual([{ line: 2, reason: `invalid UTF-8 at byte ${at} of the file` }]);
    // An encoded surrogate (CESU-8 style) and a truncated sequence are invalid too.
    expect(issuesOf(new Uint8Array([0xed, 0xa0, 0x80]))[0]?.reason).toContain('invalid UTF-8');
    expect(issuesOf(new Uint8Array([0x7b, 0xe2, 0x82]))[0]?.reason).toContain('invalid UTF-8');
  });

  test('rejects a BOM that is not at the very start', () => {
    const text = `${line('E0001')}\n\ufeff${line('E0002')}`;
    expect(issuesOf(encoder.encode(text))[0]).toMatchObject({ line: 2 });
    expect(issuesOf(`\ufeff\ufeff${line('E0001')}`)[0]).toMatchObject({ line: 1 });
  });
});

describe('parseBatch payload size', () => {
  test(`accepts a payload of exactly ${MAX_PAYLOAD_BYTES} canonical bytes and rejects one more`, () => {
    expect(parseBatch(line('E0001', payloadOfBytes(10_000))).entries[0]?.payload).toHaveLength(
      10_000,
    );
    expect(issuesOf(line('E0001', payloadOfBytes(10_001)))).toEqual([
      { line: 1, reason: 'payload is 10001 bytes in canonical form, the limit is 10000' },
    ]);
  });

  test('measures the canonical form, not the input text', () => {
    // Lots of insignificant whitespace in the input does not count.
    const spaced = payloadOfBytes(10_000).replace('{', `{${' '.repeat(5000)}`);
    expect(parseBatch(line('E0001', spaced)).entries).toHaveLength(1);
    // An escape like \u0041 shrinks to "A" in canonical form.
    const escaped = `{"p":"${'\\u0041'.repeat(9_992)}"}`;
    expect(parseBatch(line('E0001', escaped)).entries).toHaveLength(1);
  });

  test('counts multi-byte UTF-8 in bytes: 2-, 3- and 4-byte characters', () => {
    // é is 2 bytes, € is 3, 😀 is 4 (two UTF-16 code units).
    for (const fill of ['\u00e9', '\u20ac', '\u{1F600}']) {
      const bytes = encoder.encode(fill).length;
      const atLimit = 10_000 - ((10_000 - 8) % bytes); // largest size <= 10000 reachable with fill
      expect(parseBatch(line('E0001', payloadOfBytes(atLimit, fill))).entries).toHaveLength(1);
      const over = atLimit + bytes;
      expect(issuesOf(line('E0001', payloadOfBytes(over, fill)))[0]?.reason).toBe(
        `payload is ${over} bytes in canonical form, the limit is 10000`,
      );
    }
  });

  test('counts an escaped character by its canonical UTF-8 bytes', () => {
    // \u00e9 (6 input chars) is "é" in canonical form: 2 bytes each; 4996 of them = 9992 + 8.
    expect(parseBatch(line('E0001', `{"p":"${'\\u00e9'.repeat(4996)}"}`)).entries).toHaveLength(1);
    expect(issuesOf(line('E0001', `{"p":"${'\\u00e9'.repeat(4997)}"}`))[0]?.reason).toBe(
      'payload is 10002 bytes in canonical form, the limit is 10000',
    );
  });
});
