import { describe, expect, test } from 'bun:test';
import { JsonFloat, type JsonObject } from '@onceq/core';
import {
  canonicalize,
  canonicalJson,
  compareCodePoints,
  JsonParseError,
  parseJson,
} from '@onceq/core/internal';

/** The JsonParseError reason for `text`, failing the test if it parses. */
function reasonOf(text: string, options?: { maxDepth?: number }): string {
  try {
    parseJson(text, options);
  } catch (error) {
    expect(error).toBeInstanceOf(JsonParseError);
    return (error as JsonParseError).reason;
  }
  throw new Error(`expected ${JSON.stringify(text.slice(0, 80))} to be rejected`);
}

describe('parseJson accepts strict JSON', () => {
  test('parses every kind of value', () => {
    const v = parseJson(' {"s":"x","t":true,"f":false,"n":null,"a":[1,-2],"o":{}} ') as JsonObject;
    expect(v.s).toBe('x');
    expect(v.t).toBe(true);
    expect(v.f).toBe(false);
    expect(v.n).toBeNull();
    expect(v.a).toEqual([1, -2]);
    expect(Object.keys(v.o as JsonObject)).toEqual([]);
  });

  test('keeps integers as numbers and float lexemes as JsonFloat', () => {
    const v = parseJson('[10000,10000.0,1e4,1E+2,-0.5,2.50]') as unknown[];
    expect(v[0]).toBe(10000);
    for (const f of v.slice(1)) expect(f).toBeInstanceOf(JsonFloat);
    expect((v[1] as JsonFloat).value).toBe(10000);
    expect((v[2] as JsonFloat).value).toBe(10000);
    expect((v[3] as JsonFloat).value).toBe(100);
    expect((v[4] as JsonFloat).value).toBe(-0.5);
  });

  test('keeps an integer beyond 2^53 exact as a bigint', () => {
    expect(parseJson('12345678901234567890')).toBe(12345678901234567890n);
    expect(parseJson('-9007199254740993')).toBe(-9007199254740993n);
  });

  test('keeps an integer up to Number.MAX_SAFE_INTEGER a plain number', () => {
    expect(parseJson('9007199254740991')).toBe(9007199254740991);
    expect(parseJson('-9007199254740991')).toBe(-9007199254740991);
    expect(parseJson('123456789012345')).toBe(123456789012345);
  });

  test('reads the integer -0 as 0', () => {
    expect(Object.is(parseJson('-0'), 0)).toBe(true);
  });

  test('decodes escapes, including a surrogate pair written as two \\u escapes', () => {
    expect(parseJson('"a\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00"')).toBe(
      'a"\\/\b\f\n\r\té\u{1F600}',
    );
  });

  test('accepts a raw astral character (a well-formed surrogate pair)', () => {
    expect(parseJson('"😀"')).toBe('😀');
  });

  test('makes "__proto__" and "constructor" ordinary own keys without touching a prototype', () => {
    const v = parseJson('{"__proto__":{"polluted":true},"constructor":1}') as JsonObject;
    expect(Object.keys(v)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(v)).toBeNull();
    expect(Object.getOwnPropertyDescriptor(v, 'constructor')?.value).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(canonicalize(v)).toBe('{"__proto__":{"polluted":true},"constructor":1}');
  });

  test('accepts nesting exactly 64 levels deep', () => {
    expect(() => parseJson(`${'['.repeat(64)}${']'.repeat(64)}`)).not.toThrow();
  });

  test('accepts the largest finite double written as an integer', () => {
    const max = BigInt(Number.MAX_VALUE).toString();
    expect(parseJson(max)).toBe(BigInt(Number.MAX_VALUE));
  });
});

describe('parseJson rejections', () => {
  test('rejects a duplicate key with identical values', () => {
    expect(reasonOf('{"a":1,"a":1}')).toBe('duplicate key "a"');
  });

  test('rejects a duplicate key nested three levels deep', () => {
    expect(reasonOf('{"x":{"y":{"z":{"a":1,"b":2,"a":3}}}}')).toBe('duplicate key "a"');
  });

  test('rejects a duplicate key inside an array element', () => {
    expect(reasonOf('[{"k":1},{"k":1,"k":2}]')).toBe('duplicate key "k"');
  });

  test('rejects keys that are equal only after unescaping', () => {
    expect(reasonOf('{"a":1,"\\u0061":2}')).toBe('duplicate key "a"');
  });

  test('rejects a duplicate "__proto__" key', () => {
    expect(reasonOf('{"__proto__":1,"__proto__":1}')).toBe('duplicate key "__proto__"');
  });

  test('rejects NaN, Infinity and -Infinity', () => {
    expect(reasonOf('NaN')).toBe('NaN is not allowed');
    expect(reasonOf('[Infinity]')).toBe('Infinity is not allowed');
    expect(reasonOf('{"a":-Infinity}')).toBe('-Infinity is not allowed');
  });

  test('rejects a float that overflows a double', () => {
    expect(reasonOf('1e400')).toBe('number 1e400 overflows a double');
    expect(reasonOf('-1.5e309')).toBe('number -1.5e309 overflows a double');
  });

  test("the boundary rule: an integer is kept exactly within a double's range and refused beyond it; a float is refused only when it rounds to Infinity", () => {
    // Beyond 2^53 but within a double's range: an exact bigint.
    expect(parseJson('18446744073709551616')).toBe(2n ** 64n);
    expect(canonicalJson('{"n":18446744073709551616}')).toBe('{"n":18446744073709551616}');
    // The smallest integer above the largest double, and 1 followed by 400 zeros: refused.
    const justAbove = BigInt(Number.MAX_VALUE) + 1n;
    expect(reasonOf(justAbove.toString())).toBe(
      `number ${justAbove.toString().slice(0, 20)}…(309 characters) overflows a double`,
    );
    expect(reasonOf(`-${justAbove}`)).toContain('overflows a double');
    expect(reasonOf(`1${'0'.repeat(400)}`)).toBe(
      `number 10000000000000000000…(401 characters) overflows a double`,
    );
    expect(reasonOf(`{"a":[1,${'9'.repeat(309)}]}`)).toContain('overflows a double');
    // The same digits written as a float: a double. It rounds to Number.MAX_VALUE (finite),
    // so it is accepted as that float; past the rounding threshold it overflows: rejected.
    const asFloat = parseJson(`${justAbove}.0`);
    expect(asFloat).toBeInstanceOf(JsonFloat);
    expect((asFloat as JsonFloat).value).toBe(Number.MAX_VALUE);
    expect(reasonOf(`${'9'.repeat(309)}.0`)).toBe(
      `number ${'9'.repeat(20)}…(311 characters) overflows a double`,
    );
    expect(reasonOf('1e309')).toBe('number 1e309 overflows a double');
  });

  test('rejects a lone surrogate written as an escape', () => {
    expect(reasonOf('"\\ud800"')).toBe('lone surrogate \\ud800 in a string');
    expect(reasonOf('"\\udc00x"')).toBe('lone surrogate \\udc00 in a string');
    expect(reasonOf('"\\ud83d\\u0041"')).toContain('lone surrogate');
  });

  test('rejects a lone surrogate present raw in the string', () => {
    expect(reasonOf('"a\ud800b"')).toBe('lone surrogate \\ud800 in a string');
    expect(reasonOf('{"\udfff":1}')).toBe('lone surrogate \\udfff in a string');
  });

  test('rejects trailing garbage after the value', () => {
    expect(reasonOf('{"a":1} x')).toBe('unexpected character "x" at column 9 after the JSON value');
    expect(reasonOf('1 2')).toContain('after the JSON value');
  });

  test('rejects leading zeros', () => {
    expect(reasonOf('01')).toBe('leading zeros are not allowed in a number');
    expect(reasonOf('-012')).toBe('leading zeros are not allowed in a number');
  });

  test('rejects +1, .5, 1. and 1e', () => {
    expect(reasonOf('+1')).toContain('unexpected character "+"');
    expect(reasonOf('.5')).toContain('unexpected character "."');
    expect(reasonOf('1.')).toContain('expected a digit after "."');
    expect(reasonOf('[1.]')).toContain('expected a digit after "."');
    expect(reasonOf('1e')).toContain('expected a digit after the exponent');
    expect(reasonOf('-')).toContain('unexpected end of input');
  });

  test('rejects trailing commas in arrays and objects', () => {
    expect(reasonOf('[1,]')).toContain('unexpected character "]"');
    expect(reasonOf('{"a":1,}')).toContain('expected a string key');
  });

  test('rejects single quotes', () => {
    expect(reasonOf("{'a':1}")).toContain('single quotes');
    expect(reasonOf("'a'")).toContain('single quotes');
  });

  test('rejects unescaped control characters in strings', () => {
    expect(reasonOf('"a\nb"')).toBe('unescaped control character U+000A in a string');
    expect(reasonOf('"\t"')).toBe('unescaped control character U+0009 in a string');
    expect(reasonOf('"\u0000"')).toBe('unescaped control character U+0000 in a string');
  });

  test('rejects comments', () => {
    expect(reasonOf('[1 // c\n]')).toContain('comments are not JSON');
    expect(reasonOf('/* c */ 1')).toContain('comments are not JSON');
  });

  test('rejects invalid escapes and short \\u escapes', () => {
    expect(reasonOf('"\\x"')).toBe('invalid escape "\\\\x" in a string');
    expect(reasonOf('"\\u12G4"')).toContain('four hex digits');
  });

  test('rejects unquoted keys, missing colons and bare words', () => {
    expect(reasonOf('{a:1}')).toContain('unexpected character "a"');
    expect(reasonOf('{"a" 1}')).toContain('expected ":"');
    expect(reasonOf('tru')).toContain('unexpected character "t"');
    expect(reasonOf('undefined')).toContain('unexpected character "u"');
  });

  test('rejects empty and truncated input', () => {
    expect(reasonOf('')).toBe('unexpected end of input');
    expect(reasonOf('  ')).toBe('unexpected end of input');
    expect(reasonOf('[1')).toContain('unexpected end of input');
    expect(reasonOf('{"a":1')).toContain('unexpected end of input');
    expect(reasonOf('"abc')).toBe('unterminated string');
  });

  test('rejects whitespace that JSON does not allow (a non-breaking space, a BOM)', () => {
    expect(reasonOf('\u00a01')).toContain('U+00A0');
    expect(reasonOf('\ufeff{}')).toContain('U+FEFF');
  });

  test('rejects nesting 65 levels deep', () => {
    expect(reasonOf(`${'['.repeat(65)}${']'.repeat(65)}`)).toBe('nesting deeper than 64 levels');
    expect(reasonOf(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`)).toBe(
      'nesting deeper than 64 levels',
    );
  });

  test('honours a custom maxDepth', () => {
    expect(reasonOf('[[1]]', { maxDepth: 1 })).toBe('nesting deeper than 1 levels');
    expect(parseJson('[1]', { maxDepth: 1 })).toEqual([1]);
  });

  test('gives a clean JsonParseError for a hostile 100k-deep input, never a stack overflow', () => {
    expect(reasonOf('['.repeat(100_000))).toBe('nesting deeper than 64 levels');
    expect(reasonOf('{"a":'.repeat(100_000))).toBe('nesting deeper than 64 levels');
    // Without a depth limit the parser stays iterative: deep but finite input still parses.
    const deep = parseJson(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, { maxDepth: 200_000 });
    expect(Array.isArray(deep)).toBe(true);
  });

  test('reports the column of an unexpected character', () => {
    try {
      parseJson('{"a": x}');
      throw new Error('not rejected');
    } catch (error) {
      expect(error).toBeInstanceOf(JsonParseError);
      expect((error as JsonParseError).column).toBe(7);
      expect((error as JsonParseError).message).toBe('unexpected character "x" at column 7');
    }
  });
});

describe('canonicalize', () => {
  test('sorts keys and drops whitespace, so reordered objects are equal', () => {
    expect(canonicalJson('{"b":1,"a":2}')).toBe('{"a":2,"b":1}');
    expect(canonicalJson('{ "a": 2, "b": 1 }')).toBe(canonicalJson('{"b":1,"a":2}'));
  });

  test('sorts keys in nested objects, inside arrays too, and keeps array order', () => {
    expect(canonicalJson('{"z":[{"y":1,"x":2},3,1],"a":{"d":null,"c":true}}')).toBe(
      '{"a":{"c":true,"d":null},"z":[{"x":2,"y":1},3,1]}',
    );
  });

  test('keeps an integer and a float different: 10000 is not 10000.0', () => {
    expect(canonicalJson('10000')).toBe('10000');
    expect(canonicalJson('10000.0')).toBe('10000.0');
    expect(canonicalJson('{"n":10000}')).not.toBe(canonicalJson('{"n":10000.0}'));
  });

  test('writes floats in one canonical form that stays visibly a float', () => {
    expect(canonicalJson('1e4')).toBe('10000.0');
    expect(canonicalJson('1E4')).toBe(canonicalJson('10000.00'));
    expect(canonicalJson('1.50')).toBe('1.5');
    expect(canonicalJson('-0.0')).toBe('0.0');
    expect(canonicalJson('1e300')).toBe('1e+300');
    expect(canonicalJson('1e-400')).toBe('0.0');
  });

  test('writes big integers exactly', () => {
    expect(canonicalJson('[12345678901234567890,-0]')).toBe('[12345678901234567890,0]');
    const max = BigInt(Number.MAX_VALUE).toString();
    expect(canonicalJson(max)).toBe(max);
  });

  test('escapes strings as JSON.stringify does', () => {
    const s = 'q"b\\n\n\u0001\u007f é 😀 \u2028';
    expect(canonicalJson(JSON.stringify(s))).toBe(JSON.stringify(s));
    expect(canonicalJson('"\\u0041\\/"')).toBe('"A/"');
    expect(canonicalJson(`"${'x'.repeat(100)}\\n"`)).toBe(JSON.stringify(`${'x'.repeat(100)}\n`));
  });

  test('sorts keys by code point: an astral key comes after U+FFFD', () => {
    expect(canonicalJson('{"\u{1F600}":1,"\uFFFD":2,"a":3}')).toBe(
      '{"a":3,"\uFFFD":2,"\u{1F600}":1}',
    );
    expect(compareCodePoints('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
    expect(compareCodePoints('\uE000', '\u{10000}')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'a')).toBeGreaterThan(0);
    expect(compareCodePoints('a', 'b')).toBeLessThan(0);
  });

  test('sorts 1 to 20 keys in any input order into code point order (both sides of the insertion-sort limit)', () => {
    const pool = [
      'b',
      'a',
      'ab',
      'A',
      '_',
      '10',
      '9',
      'é',
      '\uFFFD',
      '\u{1F600}',
      'zz',
      'z',
      'a\u0000',
    ];
    for (let n = 1; n <= 20; n++) {
      const keys = Array.from({ length: n }, (_, i) => `${pool[(i * 7) % pool.length]}${i}`);
      const expected = [...keys].sort(compareCodePoints);
      for (const order of [keys, [...keys].reverse(), [...expected].reverse()]) {
        const text = `{${order.map((k) => `${JSON.stringify(k)}:1`).join(',')}}`;
        // The exact text: keys in code point order (Object.keys would reorder integer keys).
        // Twice: the second pass goes through the quoted-key cache.
        expect(canonicalJson(text)).toBe(
          `{${expected.map((k) => `${JSON.stringify(k)}:1`).join(',')}}`,
        );
      }
    }
  });

  test('sorts numeric-looking keys as strings, not in object insertion order', () => {
    expect(canonicalJson('{"b":1,"10":2,"9":3}')).toBe('{"10":2,"9":3,"b":1}');
  });

  test('refuses values JSON cannot carry', () => {
    expect(() => canonicalize(1.5)).toThrow(TypeError);
    expect(() => canonicalize(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalize(new JsonFloat(Number.POSITIVE_INFINITY))).toThrow(TypeError);
  });

  test('canonicalJson propagates parse errors', () => {
    expect(() => canonicalJson('{"a":1,"a":2}')).toThrow(JsonParseError);
  });

  test('is idempotent', () => {
    const once = canonicalJson('{"b":[1.0,2e2,"x"],"a":{"k":12345678901234567890}}');
    expect(canonicalJson(once)).toBe(once);
  });
});
