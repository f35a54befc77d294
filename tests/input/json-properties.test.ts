/**
 * Property tests (fast-check) of the strict JSON parser and the canonical form: what
 * json.test.ts shows on chosen examples, here on generated values and texts. A failure
 * prints fast-check's seed and the shrunk counterexample.
 */
import { describe, expect, test } from 'bun:test';
import { JsonFloat, type JsonObject } from '@onceq/core';
import {
  canonicalize,
  canonicalJson,
  JsonParseError,
  type JsonValue,
  parseJson,
} from '@onceq/core/internal';
import fc from 'fast-check';

/**
 * Runs per property: 300 (1000 for the random-text comparison with JSON.parse).
 * `ONCEQ_JSON_RUNS` overrides both: `bun run mutation` runs these properties once per
 * mutant on instrumented code and sets it lower (scripts/mutation-scopes.sh).
 */
const RUNS_OVERRIDE = process.env.ONCEQ_JSON_RUNS ? Number(process.env.ONCEQ_JSON_RUNS) : undefined;
const RUNS = { numRuns: RUNS_OVERRIDE ?? 300 };

/** Strings without lone surrogates: what a JSON string may carry. */
const text = fc.string({ unit: 'grapheme', maxLength: 8 });
const key = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.constantFrom('__proto__', 'constructor', 'a', 'b'),
);
const safeInt = fc.maxSafeInteger().map((n) => (Object.is(n, -0) ? 0 : n));
/** The largest double, exactly: the largest integer the parser keeps. */
const MAX_DOUBLE = BigInt(Number.MAX_VALUE);
/** Integers beyond 2^53 (both signs): kept exactly as bigint. */
const bigInt = fc.bigInt({ min: 2n ** 53n, max: 10n ** 40n }).chain((b) => fc.constantFrom(b, -b));
const float = fc
  .double({ noNaN: true, noDefaultInfinity: true })
  .map((d) => new JsonFloat(Object.is(d, -0) ? 0 : d));

/** A JSON value as parseJson returns it, objects with null prototypes and unique keys. */
const { value: jsonValue } = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    text,
    safeInt,
    bigInt,
    float,
    fc.array(tie('value'), { maxLength: 4 }),
    fc
      .uniqueArray(fc.tuple(key, tie('value')), { maxLength: 4, selector: ([k]) => k })
      .map(toObject),
  ),
}));

function toObject(entries: [string, JsonValue][]): JsonObject {
  const obj = Object.create(null) as JsonObject;
  for (const [k, v] of entries) obj[k] = v;
  return obj;
}

/**
 * Writes `value` as JSON text with its own choices: keys in the order `order` gives,
 * whitespace from `space`, floats written in exponent form when `exp` says so.
 */
function write(
  value: JsonValue,
  order: (keys: string[]) => string[],
  space: string,
  exp: boolean,
): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint') return value.toString();
  if (value instanceof JsonFloat) return exp ? value.value.toExponential() : canonicalize(value);
  if (Array.isArray(value)) {
    return `[${space}${value.map((v) => write(v, order, space, exp)).join(`${space},${space}`)}${space}]`;
  }
  const parts = order(Object.keys(value)).map(
    (k) =>
      `${JSON.stringify(k)}${space}:${space}${write(value[k] as JsonValue, order, space, exp)}`,
  );
  return `{${space}${parts.join(`,${space}`)}${space}}`;
}

/** Wraps `inner` (JSON text) in `depth` random containers. */
const wrapped = (inner: fc.Arbitrary<string>) =>
  fc
    .tuple(inner, fc.array(fc.constantFrom('array', 'object', 'object-last'), { maxLength: 6 }))
    .map(([core, shells]) =>
      shells.reduce(
        (t, shell) =>
          shell === 'array'
            ? `[1,${t}]`
            : shell === 'object'
              ? `{"x":${t},"y":2}`
              : `{"y":[],"z":${t}}`,
        core,
      ),
    );

function rejects(textToParse: string): boolean {
  try {
    parseJson(textToParse);
    return false;
  } catch (error) {
    expect(error).toBeInstanceOf(JsonParseError);
    return true;
  }
}

/** A plain value as JSON.parse builds it, from one of parseJson's values. */
function toPlain(value: JsonValue): unknown {
  if (value instanceof JsonFloat) return value.value;
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).map((k) => [k, toPlain(value[k] as JsonValue)]));
  }
  return value;
}

/** Stable text of a plain value (keys sorted, -0 as 0), to compare two plain values. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(obj[k])}`)
      .join(',')}}`;
  }
  return typeof value === 'number' && Object.is(value, -0) ? '0' : JSON.stringify(value);
}

describe('canonical form (properties)', () => {
  test('parse ∘ canonicalize is the identity on canonical text', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const canonical = canonicalize(value);
        expect(canonicalize(parseJson(canonical))).toBe(canonical);
        expect(canonicalJson(canonical)).toBe(canonical);
      }),
      RUNS,
    );
  });

  test('key order, whitespace and float spelling do not change the canonical form', () => {
    fc.assert(
      fc.property(
        jsonValue,
        fc.constantFrom('', ' ', '\n', '\t ', '\r\n'),
        fc.boolean(),
        fc.boolean(),
        (value, space, reverse, exp) => {
          const order = (keys: string[]) => (reverse ? [...keys].reverse() : [...keys].sort());
          expect(canonicalJson(write(value, order, space, exp))).toBe(canonicalize(value));
        },
      ),
      RUNS,
    );
  });

  test('an integer and the same value as a float stay different (10000 ≠ 10000.0, 1e4 is a float)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e15, max: 1e15 }), (n) => {
        const int = canonicalJson(String(n));
        expect(int).toBe(String(n === 0 ? 0 : n));
        expect(canonicalJson(`${n}.0`)).not.toBe(int);
        expect(canonicalJson(`${n}.0`)).toBe(canonicalJson(`${n}e0`));
        expect(parseJson(`${n}e0`)).toBeInstanceOf(JsonFloat);
      }),
      RUNS,
    );
  });

  test('big integers are kept exactly', () => {
    fc.assert(
      fc.property(bigInt, (b) => {
        expect(parseJson(b.toString())).toBe(b);
        expect(canonicalJson(`{"n":${b}}`)).toBe(`{"n":${b}}`);
      }),
      RUNS,
    );
  });

  test("integers up to a double's range are kept exactly, however many digits", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 2n ** 53n, max: MAX_DOUBLE }).chain((b) => fc.constantFrom(b, -b)),
        (b) => {
          expect(parseJson(b.toString())).toBe(b);
        },
      ),
      RUNS,
    );
  });
});

describe('strict parser rejects (properties)', () => {
  test('a repeated key at any depth, also when spelled with escapes', () => {
    const duplicate = fc
      .tuple(fc.constantFrom('k', 'a', '__proto__'), fc.boolean())
      .map(([k, escaped]) => {
        const again = escaped
          ? `"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
          : JSON.stringify(k);
        return `{${JSON.stringify(k)}:1,"other":[],${again}:{"v":2}}`;
      });
    fc.assert(
      fc.property(wrapped(duplicate), (t) => {
        expect(rejects(t)).toBe(true);
      }),
      RUNS,
    );
  });

  test("an integer beyond a double's range anywhere", () => {
    const beyond = fc
      .bigInt({ min: MAX_DOUBLE + 1n, max: 10n ** 1000n })
      .chain((b) => fc.constantFrom(b, -b))
      .map(String);
    fc.assert(
      fc.property(wrapped(beyond), (t) => {
        expect(rejects(t)).toBe(true);
      }),
      RUNS,
    );
  });

  test('NaN, Infinity and -Infinity anywhere', () => {
    fc.assert(
      fc.property(wrapped(fc.constantFrom('NaN', 'Infinity', '-Infinity')), (t) => {
        expect(rejects(t)).toBe(true);
      }),
      RUNS,
    );
  });

  test('a lone surrogate, escaped or raw', () => {
    const lone = fc
      .tuple(fc.integer({ min: 0xd800, max: 0xdfff }), fc.boolean(), text)
      // `rest` as escaped string content: raw, a trailing backslash would escape the
      // escape's own backslash, and the text would hold no surrogate at all.
      .map(([unit, escaped, rest]) => [unit, escaped, JSON.stringify(rest).slice(1, -1)] as const)
      .map(([unit, escaped, rest]) =>
        escaped ? `"${rest}\\u${unit.toString(16)}"` : `"${rest}${String.fromCharCode(unit)}"`,
      );
    fc.assert(
      fc.property(wrapped(lone), (t) => {
        expect(rejects(t)).toBe(true);
      }),
      RUNS,
    );
  });

  test('nesting deeper than 64 levels, and only that', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 130 }),
        fc.array(fc.boolean(), { minLength: 130, maxLength: 130 }),
        (depth, kinds) => {
          let t = '0';
          for (let i = 0; i < depth; i++) t = kinds[i] ? `[${t}]` : `{"d":${t}}`;
          expect(rejects(t)).toBe(depth > 64);
        },
      ),
      RUNS,
    );
  });
});

describe('strict parser agrees with JSON.parse where both accept', () => {
  test('whatever parseJson accepts, JSON.parse accepts with the same value', () => {
    const candidates = fc.oneof(
      fc.json(),
      fc.string({ maxLength: 12 }),
      // JSON text with one character changed: mostly invalid, sometimes subtly valid.
      fc
        .tuple(
          fc.json(),
          fc.nat(),
          fc.constantFrom('', ' ', ',', '"', '0', '.', 'e', '-', '}', ']', '\\'),
        )
        .map(([t, at, c]) => {
          const i = t.length === 0 ? 0 : at % t.length;
          return t.slice(0, i) + c + t.slice(i + 1);
        }),
    );
    fc.assert(
      fc.property(candidates, (t) => {
        let ours: JsonValue;
        try {
          ours = parseJson(t);
        } catch (error) {
          expect(error).toBeInstanceOf(JsonParseError);
          return;
        }
        expect(stable(toPlain(ours))).toBe(stable(JSON.parse(t)));
      }),
      { numRuns: RUNS_OVERRIDE ?? 1000 },
    );
  });

  test('JSON.stringify output without duplicate keys is accepted and reads the same', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), (value) => {
        const t = JSON.stringify(value);
        expect(stable(toPlain(parseJson(t)))).toBe(stable(JSON.parse(t)));
      }),
      RUNS,
    );
  });
});
