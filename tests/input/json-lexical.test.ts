/**
 * The lexical rules of the strict JSON parser and the canonical form: where an error points (`column`, 1-based, the start of the offending
 * token), which sentence a truncated text gets, the exact ranges of hex digits and
 * surrogates, escaping in the canonical form, and key order by code point around the
 * surrogates. Example based; json-properties.test.ts covers the same rules on random
 * values.
 */
import { describe, expect, test } from 'bun:test';
import { JsonFloat } from '@onceq/core';
import {
  canonicalFloat,
  canonicalize,
  canonicalJson,
  compareCodePoints,
  isJsonObject,
  JsonParseError,
  parseJson,
} from '@onceq/core/internal';

/** The JsonParseError for `text`, failing the test if it parses. */
function rejection(text: string): { reason: string; column: number } {
  try {
    parseJson(text);
  } catch (error) {
    expect(error).toBeInstanceOf(JsonParseError);
    const { reason, column } = error as JsonParseError;
    return { reason, column };
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parseJson points at the start of the offending token', () => {
  test.each([
    ['{"a":1,"a":2}', 8, 'the repeated key'],
    ['"\\ud800x"', 2, 'the lone surrogate escape'],
    ['"\\x"', 2, 'the invalid escape'],
    ['"ab\\u12"', 4, 'the unterminated \\u escape'],
    ['"ab\\u12G4"', 4, 'the \\u escape with a non-hex digit'],
    ['01', 1, 'the number with a leading zero'],
    ['[1e999]', 2, 'the overflowing number'],
    ['"abc', 5, 'the end of an unterminated string'],
  ])('%p: column %p (%s)', (text, column) => {
    expect(rejection(text).column).toBe(column);
  });
});

describe('parseJson says where a truncated text ends', () => {
  test.each([
    ['{', 'unexpected end of input inside an object'],
    ['{"a"', 'unexpected end of input inside an object'],
    ['{"a":1', 'unexpected end of input inside an object'],
    ['{"a":1,', 'unexpected end of input inside an object'],
    ['[1', 'unexpected end of input inside an array'],
    ['"\\', 'unterminated string'],
    ['"abc', 'unterminated string'],
    ['-', 'unexpected end of input after "-"'],
    ['1.', 'unexpected end of input, expected a digit after "."'],
    ['1e', 'unexpected end of input, expected a digit after the exponent'],
    ['1e+', 'unexpected end of input, expected a digit after the exponent'],
  ])('%p: %p', (text, reason) => {
    expect(rejection(text).reason).toBe(reason);
  });

  test('a printable character is quoted, anything else named by code point', () => {
    expect(rejection('!').reason).toBe('unexpected character "!" at column 1');
    expect(rejection('~').reason).toBe('unexpected character "~" at column 1');
    expect(rejection('1"').reason).toBe(
      'unexpected character U+0022 at column 2 after the JSON value',
    );
    expect(rejection('\u0001').reason).toBe('unexpected character U+0001 at column 1');
    expect(rejection('-x').reason).toBe(
      'unexpected character "x" at column 2, expected a digit after "-"',
    );
  });
});

describe('\\u escapes: exactly four hex digits, either case', () => {
  test('the edges of each digit range decode to their values', () => {
    expect(parseJson('"\\u0030\\u0039\\u0061\\u0066\\u0041\\u0046"')).toBe('09afAF');
    expect(parseJson('"\\u004A\\u004a\\u00Ff"')).toBe('JJ\u00ff');
  });

  test.each(['/', ':', '@', 'G', '`', 'g'])(
    'the character just outside a range, %p, is refused',
    (c) => {
      expect(rejection(`"\\u002${c}"`).reason).toBe(
        `invalid escape "\\\\u002${c}" in a string (\\u needs four hex digits)`,
      );
    },
  );
});

describe('surrogates: a pair is one character, a lone half is refused', () => {
  test('escaped pairs at both ends of the ranges decode', () => {
    expect(parseJson('"\\ud800\\udc00"')).toBe('\u{10000}');
    expect(parseJson('"\\udbff\\udfff"')).toBe('\u{10ffff}');
    expect(parseJson('"\\ud83d\\ude00"')).toBe('😀');
  });

  test('raw pairs at both ends of the ranges are accepted', () => {
    expect(parseJson('"\ud800\udc00"')).toBe('\u{10000}');
    expect(parseJson('"\udbff\udfff"')).toBe('\u{10ffff}');
  });

  test.each([
    ['"\\udfff"', '\\udfff'],
    ['"\\udc00"', '\\udc00'],
    ['"\\ud83dxude00"', '\\ud83d'],
    ['"\\ud800\\ue000"', '\\ud800'],
    ['"\\ud800\\u0041"', '\\ud800'],
  ])('the escape %p is a lone surrogate', (text, named) => {
    expect(rejection(text).reason).toBe(`lone surrogate ${named} in a string`);
  });

  test('a raw high surrogate followed by a non-low one, or by nothing, is refused', () => {
    expect(rejection('"\ud800\ue000"').reason).toBe('lone surrogate \\ud800 in a string');
    expect(rejection('"\ud800"').reason).toBe('lone surrogate \\ud800 in a string');
    expect(rejection('"\udc00"').reason).toBe('lone surrogate \\udc00 in a string');
  });
});

describe('canonical form: strings and key order', () => {
  test.each([
    'a"b',
    'a\\b',
    '\u0000',
    '\u001f',
    ' ',
    '\ud800',
    '\udfff',
    'x\u{10000}',
    '\ue000',
    'é',
  ])('the string %p is escaped exactly as JSON.stringify does', (text) => {
    expect(canonicalize(text)).toBe(JSON.stringify(text));
  });

  test('keys are ordered by code point, astral characters after U+FFFF', () => {
    const text = '{"\ud800\udc00":1,"\uffff":2,"\ue000":3,"\ud7ff":4,"😀a":5,"😀":6,"a":7}';
    expect(canonicalJson(text)).toBe(
      '{"a":7,"\ud7ff":4,"\ue000":3,"\uffff":2,"\ud800\udc00":1,"😀":6,"😀a":5}',
    );
  });

  test('compareCodePoints around the surrogates, and a prefix first', () => {
    expect(compareCodePoints('\ue000', '\ud7ff')).toBeGreaterThan(0);
    expect(compareCodePoints('\ud7ff', '\ue000')).toBeLessThan(0);
    expect(compareCodePoints('\ue000', '\u{10000}')).toBeLessThan(0);
    expect(compareCodePoints('\u{10000}', '\ue000')).toBeGreaterThan(0);
    expect(compareCodePoints('😀', '😀a')).toBeLessThan(0);
    expect(compareCodePoints('😀a', '😀')).toBeGreaterThan(0);
    expect(compareCodePoints('😀', '😀')).toBe(0);
  });
});

describe('canonicalize refuses what JSON cannot carry', () => {
  test('undefined, a function and a symbol are TypeErrors, not silently dropped', () => {
    for (const value of [undefined, () => 1, Symbol('s')]) {
      expect(() => canonicalize(value as never)).toThrow(TypeError);
    }
    expect(() => canonicalize({ a: undefined } as never)).toThrow(TypeError);
  });
});

describe('values', () => {
  test('isJsonObject is true for an object only', () => {
    expect(isJsonObject(parseJson('{}'))).toBe(true);
    expect(isJsonObject({ a: 1 })).toBe(true);
    for (const other of [null, [], 'x', 1, true, new JsonFloat(1.5), undefined]) {
      expect(isJsonObject(other)).toBe(false);
    }
  });

  test('a float reads as a float, in text and through toString', () => {
    expect(canonicalFloat(10000)).toBe('10000.0');
    expect(canonicalFloat(1.5)).toBe('1.5');
    expect(canonicalFloat(1e300)).toBe('1e+300');
    expect(canonicalFloat(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(canonicalFloat(Number.NaN)).toBe('NaN');
    expect(String(new JsonFloat(10000))).toBe('10000.0');
  });
});
