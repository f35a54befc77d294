/**
 * Canonical JSON text (docs/protocol.md §2): object keys sorted by Unicode code point, no insignificant
 * whitespace, strings escaped as `JSON.stringify` does, integers in plain decimal (bigint
 * too), floats through {@link canonicalFloat} so they always read as floats (`1e4` →
 * `10000.0`). Two payloads are the same exactly when their canonical texts are equal, so
 * `{"b":1,"a":2}` equals `{ "a": 2, "b": 1 }` but `10000` differs from `10000.0`.
 */

import { canonicalFloat, JsonFloat, type JsonObject, type JsonValue } from './json-value.ts';
import { parseJson } from './parse-json.ts';

/**
 * The canonical text of a value. Recursive: values from {@link parseJson} are at most 64
 * levels deep. Throws a `TypeError` for what JSON cannot carry (a non-integer or non-finite
 * `number` — floats must be a {@link JsonFloat} —, a non-finite float, `undefined`).
 */
export function canonicalize(value: JsonValue): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      if (!Number.isSafeInteger(value)) {
        throw new TypeError(
          `canonicalize: the number ${value} is not a safe integer (floats are JsonFloat, big integers bigint)`,
        );
      }
      return value === 0 ? '0' : String(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (value instanceof JsonFloat) {
        if (!Number.isFinite(value.value)) {
          throw new TypeError(`canonicalize: the float ${value.value} is not JSON`);
        }
        return canonicalFloat(value.value);
      }
      if (Array.isArray(value)) {
        const n = value.length;
        if (n === 0) return '[]';
        let out = `[${canonicalize(value[0] as JsonValue)}`;
        for (let i = 1; i < n; i++) out += `,${canonicalize(value[i] as JsonValue)}`;
        return `${out}]`;
      }
      return canonicalObject(value);
    }
    default:
      throw new TypeError(`canonicalize: a ${typeof value} is not a JSON value`);
  }
}

function canonicalObject(obj: JsonObject): string {
  const keys = Object.keys(obj);
  const n = keys.length;
  if (n === 0) return '{}';
  if (n > 1) {
    // UTF-16 code unit order (what `<` and the default sort compare) agrees with code
    // point order unless a key holds a surrogate (astral character) or a character in
    // U+E000..U+FFFF.
    sortByCodeUnits(keys);
    if (needsCodePointSort(keys)) keys.sort(compareCodePoints);
  }
  let out = '{';
  for (let i = 0; i < n; i++) {
    const key = keys[i] as string;
    if (i > 0) out += ',';
    out += `${quoteKey(key)}:${canonicalize(obj[key] as JsonValue)}`;
  }
  return `${out}}`;
}

/** Keys up to this many are sorted by insertion (payloads mostly have a handful). */
const INSERTION_SORT_MAX = 12;

/**
 * `keys.sort()`, by insertion for small arrays: the native sort's set-up costs more than
 * the few comparisons a payload's 2-10 keys need (enqueue canonicalises every payload).
 */
function sortByCodeUnits(keys: string[]): void {
  const n = keys.length;
  if (n > INSERTION_SORT_MAX) {
    keys.sort();
    return;
  }
  for (let i = 1; i < n; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
}

/** Quoted keys seen before: the same few keys recur on every line of a batch. */
const quotedKeys = new Map<string, string>();
/** Bounds the cache: a stream of ever-new keys must not grow memory without end. */
const QUOTED_KEYS_MAX = 4096;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = quote(key);
    if (key.length <= 64 && quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** `JSON.stringify(text)`, with a fast path for short strings that need no escaping. */
function quote(text: string): string {
  const n = text.length;
  if (n > 64) return JSON.stringify(text);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
      return JSON.stringify(text);
    }
  }
  return `"${text}"`;
}

function needsCodePointSort(keys: string[]): boolean {
  for (const key of keys) {
    for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) >= 0xd800) return true;
  }
  return false;
}

/** Orders strings by Unicode code point (astral characters after U+FFFF, not among U+D800..). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // Move U+E000..U+FFFF below the surrogates, which stand for code points above U+FFFF.
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** `canonicalize(parseJson(text))`: the canonical form of a strict JSON text. */
export function canonicalJson(text: string): string {
  return canonicalize(parseJson(text));
}
