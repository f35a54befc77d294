/**
 * onceq's strict JSON parser (docs/protocol.md §2).
 *
 * `JSON.parse` is not strict enough for an exactly-once transport: it keeps the last of
 * duplicate keys, turns `1.0` into `1` and rounds big integers. This parser accepts exactly
 * RFC 8259 JSON and additionally rejects:
 * - a repeated key in any object at any depth (compared after unescaping, whatever the values);
 * - the constants `NaN`, `Infinity`, `-Infinity` (they are not JSON, but say so clearly);
 * - a number too large for a double: a float lexeme (with `.` or an exponent) that
 *   `Number()` would round to ±Infinity, or an integer lexeme whose exact value is beyond
 *   ±`Number.MAX_VALUE`;
 * - lone UTF-16 surrogates in strings, written as `\ud800` escapes or present raw;
 * - nesting deeper than `maxDepth` (default 64) levels.
 *
 * It keeps the kind of every number: integers become a `number` (or a `bigint` beyond
 * `Number.MAX_SAFE_INTEGER`, exact), floats become a {@link JsonFloat}.
 *
 * The boundary rule: **an integer lexeme is kept exact** (a bigint beyond 2^53, such as
 * 2^64) **within a double's range**, and refused beyond ±`Number.MAX_VALUE`, since a
 * reader holding it as a double would get Infinity; **a float lexeme is a double** and is
 * rejected only when it rounds to Infinity. So `1` followed by 400 zeros and `1e400` are
 * both rejected; the integer one above `Number.MAX_VALUE` is rejected, while the same
 * digits written as a float round to `Number.MAX_VALUE` and are accepted. Objects have a
 * null prototype, so `"__proto__"` and `"constructor"` are ordinary own keys.
 *
 * The parser is iterative (an explicit stack, no recursion): a hostile 100k-deep `[[[[…`
 * gets a clean {@link JsonParseError}, never a stack overflow.
 */
import { JsonFloat, type JsonObject, type JsonValue } from './json-value.ts';

/** The text is not strict JSON. `reason` is one short sentence; `column` is 1-based (0 = unknown). */
export class JsonParseError extends Error {
  readonly reason: string;
  readonly column: number;
  constructor(reason: string, column = 0) {
    super(reason);
    this.name = 'JsonParseError';
    this.reason = reason;
    this.column = column;
  }
}

export interface ParseJsonOptions {
  /** Containers nested deeper than this are rejected. Default 64 (docs/protocol.md §2). */
  maxDepth?: number;
}

/** The default nesting limit: docs/protocol.md §2 forbids nesting deeper than 64 levels. */
export const DEFAULT_MAX_DEPTH = 64;

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);
const MAX_DOUBLE_BIG = BigInt(Number.MAX_VALUE);

// Parser state. The parser is synchronous and never re-entered, so module state is safe and
// avoids the cost of closures capturing a mutable cursor.
let src = '';
let pos = 0;
let end = 0;

/** Parse one strict JSON text. Throws {@link JsonParseError} on anything not allowed. */
export function parseJson(text: string, options?: ParseJsonOptions): JsonValue {
  const maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH;
  src = text;
  pos = 0;
  end = text.length;
  try {
    return parseText(maxDepth);
  } finally {
    src = '';
  }
}

function parseText(maxDepth: number): JsonValue {
  // Open containers, innermost last. For an object frame, keys[k] is the key awaiting its value.
  const stack: (JsonValue[] | JsonObject)[] = [];
  const keys: string[] = [];
  let value: JsonValue;

  for (;;) {
    // ---- read one value, or open a container and go read its first value ----
    skipWhitespace();
    if (pos >= end) throw fail('unexpected end of input');
    const c = src.charCodeAt(pos);
    if (c === 0x7b /* { */) {
      if (stack.length >= maxDepth) throw deep(maxDepth);
      pos++;
      const obj: JsonObject = Object.create(null);
      skipWhitespace();
      if (pos < end && src.charCodeAt(pos) === 0x7d /* } */) {
        pos++;
        value = obj;
      } else {
        keys[stack.length] = readKey(obj);
        stack.push(obj);
        continue;
      }
    } else if (c === 0x5b /* [ */) {
      if (stack.length >= maxDepth) throw deep(maxDepth);
      pos++;
      const arr: JsonValue[] = [];
      skipWhitespace();
      if (pos < end && src.charCodeAt(pos) === 0x5d /* ] */) {
        pos++;
        value = arr;
      } else {
        stack.push(arr);
        continue;
      }
    } else if (c === 0x22 /* " */) {
      pos++;
      value = readString();
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      value = readNumber();
    } else if (c === 0x74 /* t */ && src.startsWith('true', pos)) {
      pos += 4;
      value = true;
    } else if (c === 0x66 /* f */ && src.startsWith('false', pos)) {
      pos += 5;
      value = false;
    } else if (c === 0x6e /* n */ && src.startsWith('null', pos)) {
      pos += 4;
      value = null;
    } else if (src.startsWith('NaN', pos)) {
      throw fail('NaN is not allowed');
    } else if (src.startsWith('Infinity', pos)) {
      throw fail('Infinity is not allowed');
    } else {
      throw unexpected(pos);
    }

    // ---- a value is complete: hand it to its container, closing containers as they end ----
    for (;;) {
      const depth = stack.length;
      if (depth === 0) {
        skipWhitespace();
        if (pos < end) throw unexpected(pos, ' after the JSON value');
        return value;
      }
      const top = stack[depth - 1] as JsonValue[] | JsonObject;
      skipWhitespace();
      const d = pos < end ? src.charCodeAt(pos) : -1;
      if (Array.isArray(top)) {
        top.push(value);
        if (d === 0x2c /* , */) {
          pos++;
          break;
        }
        if (d === 0x5d /* ] */) {
          pos++;
          stack.pop();
          value = top;
          continue;
        }
        if (d === -1) throw fail('unexpected end of input inside an array');
        throw unexpected(pos, ', expected "," or "]"');
      }
      (top as JsonObject)[keys[depth - 1] as string] = value;
      if (d === 0x2c /* , */) {
        pos++;
        skipWhitespace();
        keys[depth - 1] = readKey(top as JsonObject);
        break;
      }
      if (d === 0x7d /* } */) {
        pos++;
        stack.pop();
        value = top;
        continue;
      }
      if (d === -1) throw fail('unexpected end of input inside an object');
      throw unexpected(pos, ', expected "," or "}"');
    }
  }
}

/** At an object key (whitespace skipped): read `"key"` and the `:` after it. */
function readKey(obj: JsonObject): string {
  if (pos >= end) throw fail('unexpected end of input inside an object');
  if (src.charCodeAt(pos) !== 0x22) throw unexpected(pos, ', expected a string key');
  const keyAt = pos;
  pos++;
  const key = readCachedKey() ?? readString();
  // Null prototype: only own keys can be found, and every stored value is defined.
  if (obj[key] !== undefined) {
    throw new JsonParseError(`duplicate key ${quoteForMessage(key)}`, keyAt + 1);
  }
  skipWhitespace();
  if (pos >= end) throw fail('unexpected end of input inside an object');
  if (src.charCodeAt(pos) !== 0x3a /* : */) throw unexpected(pos, ', expected ":"');
  pos++;
  return key;
}

// Recently seen keys, by a cheap hash of the raw text. Returning an already-seen string lets
// the engine skip interning a fresh substring on every property store (keys repeat per line).
const keyCache: (string | undefined)[] = new Array(256).fill(undefined);

/** Just after a key's opening quote: the cached key if the raw text matches one, else undefined. */
function readCachedKey(): string | undefined {
  let i = pos;
  let h = 0;
  for (; i < end; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x22) break;
    if (c === 0x5c || c < 0x20 || c >= 0xd800) return undefined;
    h = (h * 31 + c) | 0;
  }
  if (i >= end || i - pos > 64) return undefined;
  const slot = h & 255;
  const cached = keyCache[slot];
  if (cached !== undefined && cached.length === i - pos && src.startsWith(cached, pos)) {
    pos = i + 1;
    return cached;
  }
  const key = src.slice(pos, i);
  keyCache[slot] = key;
  pos = i + 1;
  return key;
}

function skipWhitespace(): void {
  while (pos < end) {
    const c = src.charCodeAt(pos);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
    else return;
  }
}

/** Just after the opening quote: read the string and the closing quote. */
function readString(): string {
  let start = pos;
  let out = '';
  for (;;) {
    if (pos >= end) throw fail('unterminated string');
    const c = src.charCodeAt(pos);
    if (c === 0x22 /* " */) {
      const s = start === pos ? out : out + src.slice(start, pos);
      pos++;
      return s;
    }
    if (c === 0x5c /* \ */) {
      if (pos > start) out += src.slice(start, pos);
      out += readEscape();
      start = pos;
    } else if (c < 0x20) {
      throw fail(`unescaped control character ${codePointName(c)} in a string`);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const next = pos + 1 < end ? src.charCodeAt(pos + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) pos += 2;
      else throw fail(`lone surrogate ${codePointName(c)} in a string`);
    } else {
      pos++;
    }
  }
}

/** At a backslash: decode one escape (a `\uD83D\uDE00` pair counts as one) and return its text. */
function readEscape(): string {
  const at = pos;
  if (pos + 1 >= end) throw fail('unterminated string');
  const e = src.charCodeAt(pos + 1);
  pos += 2;
  switch (e) {
    case 0x22:
      return '"';
    case 0x5c:
      return '\\';
    case 0x2f:
      return '/';
    case 0x62:
      return '\b';
    case 0x66:
      return '\f';
    case 0x6e:
      return '\n';
    case 0x72:
      return '\r';
    case 0x74:
      return '\t';
    case 0x75: {
      const u = readHex4(at);
      if (u < 0xd800 || u > 0xdfff) return String.fromCharCode(u);
      if (u <= 0xdbff && src.charCodeAt(pos) === 0x5c && src.charCodeAt(pos + 1) === 0x75) {
        const save = pos;
        pos += 2;
        const lo = readHex4(save);
        if (lo >= 0xdc00 && lo <= 0xdfff) return String.fromCharCode(u, lo);
      }
      throw new JsonParseError(`lone surrogate ${src.slice(at, at + 6)} in a string`, at + 1);
    }
    default:
      throw new JsonParseError(
        `invalid escape ${quoteForMessage(src.slice(at, at + 2))} in a string`,
        at + 1,
      );
  }
}

/** After `\u`: four hex digits. `at` is the backslash, for the message. */
function readHex4(at: number): number {
  if (pos + 4 > end) throw new JsonParseError('unterminated \\u escape in a string', at + 1);
  let u = 0;
  for (let k = 0; k < 4; k++) {
    const h = src.charCodeAt(pos + k);
    let v: number;
    if (h >= 0x30 && h <= 0x39) v = h - 0x30;
    else if (h >= 0x61 && h <= 0x66) v = h - 0x57;
    else if (h >= 0x41 && h <= 0x46) v = h - 0x37;
    else {
      throw new JsonParseError(
        `invalid escape ${quoteForMessage(src.slice(at, pos + 4))} in a string (\\u needs four hex digits)`,
        at + 1,
      );
    }
    u = (u << 4) | v;
  }
  pos += 4;
  return u;
}

function readNumber(): JsonValue {
  const start = pos;
  let c = src.charCodeAt(pos);
  if (c === 0x2d /* - */) {
    pos++;
    if (src.startsWith('Infinity', pos)) {
      pos = start;
      throw fail('-Infinity is not allowed');
    }
    c = pos < end ? src.charCodeAt(pos) : -1;
    if (c < 0x30 || c > 0x39) {
      if (c === -1) throw fail('unexpected end of input after "-"');
      throw unexpected(pos, ', expected a digit after "-"');
    }
  }
  pos++;
  if (c === 0x30) {
    const d = pos < end ? src.charCodeAt(pos) : -1;
    if (d >= 0x30 && d <= 0x39) {
      throw new JsonParseError('leading zeros are not allowed in a number', start + 1);
    }
  } else {
    skipDigits();
  }
  let isFloat = false;
  if (pos < end && src.charCodeAt(pos) === 0x2e /* . */) {
    pos++;
    if (skipDigits() === 0) throw needDigit('"."');
    isFloat = true;
  }
  if (pos < end && (src.charCodeAt(pos) | 0x20) === 0x65 /* e or E */) {
    pos++;
    const s = pos < end ? src.charCodeAt(pos) : -1;
    if (s === 0x2b || s === 0x2d) pos++;
    if (skipDigits() === 0) throw needDigit('the exponent');
    isFloat = true;
  }
  const lexeme = src.slice(start, pos);
  if (isFloat) {
    const v = Number(lexeme);
    if (v === Infinity || v === -Infinity) {
      throw new JsonParseError(`number ${shorten(lexeme)} overflows a double`, start + 1);
    }
    return new JsonFloat(v);
  }
  // Up to 15 digits an integer is always exact as a double.
  if (lexeme.length <= 15) {
    let v = 0;
    const neg = lexeme.charCodeAt(0) === 0x2d;
    for (let k = neg ? 1 : 0; k < lexeme.length; k++) v = v * 10 + (lexeme.charCodeAt(k) - 0x30);
    return neg && v !== 0 ? -v : v;
  }
  // Integers stay exact; only one beyond the largest double (309 digits or more) is refused.
  const big = BigInt(lexeme);
  if (big <= MAX_SAFE_BIG && big >= -MAX_SAFE_BIG) return Number(big);
  if (big > MAX_DOUBLE_BIG || big < -MAX_DOUBLE_BIG) {
    throw new JsonParseError(`number ${shorten(lexeme)} overflows a double`, start + 1);
  }
  return big;
}

function skipDigits(): number {
  const from = pos;
  while (pos < end) {
    const c = src.charCodeAt(pos);
    if (c >= 0x30 && c <= 0x39) pos++;
    else break;
  }
  return pos - from;
}

function needDigit(after: string): JsonParseError {
  if (pos >= end) return fail(`unexpected end of input, expected a digit after ${after}`);
  return unexpected(pos, `, expected a digit after ${after}`);
}

function fail(reason: string): JsonParseError {
  return new JsonParseError(reason, pos + 1);
}

function deep(maxDepth: number): JsonParseError {
  return fail(`nesting deeper than ${maxDepth} levels`);
}

function unexpected(at: number, tail = ''): JsonParseError {
  const c = src.codePointAt(at) ?? 0;
  let shown: string;
  if (c === 0x27) shown = `"'" (single quotes are not JSON)`;
  else if (c === 0x2f) shown = `"/" (comments are not JSON)`;
  else
    shown = c >= 0x21 && c <= 0x7e && c !== 0x22 ? `"${String.fromCharCode(c)}"` : codePointName(c);
  return new JsonParseError(`unexpected character ${shown} at column ${at + 1}${tail}`, at + 1);
}

function codePointName(c: number): string {
  if (c >= 0xd800 && c <= 0xdfff) return `\\u${c.toString(16).padStart(4, '0')}`;
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 20)}…(${text.length} characters)` : text;
}

function quoteForMessage(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}
