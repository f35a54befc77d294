/**
 * Shared business-rule building blocks (docs/protocol.md §3): zod schemas for the payload fields
 * and {@link makeHandler}, which turns a version's category list into a {@link Handler}.
 *
 * Payloads arrive from onceq's strict JSON parser, so numbers keep their kind: an
 * integer lexeme is a `number` (or a `bigint` beyond 2^53) and a float lexeme
 * (`100.0`, `1e2`) is a {@link JsonFloat}. Nothing here coerces: `true`, `"100"`,
 * `100.0` and an out-of-range bigint are all rejected.
 */
import { z } from 'zod';
import { PermanentFailure } from '../../core/src/errors.ts';
import { JsonFloat, type JsonObject } from '../../core/src/json/value.ts';
import type { Effect, Handler } from '../../core/src/types.ts';

/** Smallest accepted `amount_cents`. */
export const MIN_AMOUNT_CENTS = 1;
/** Largest accepted `amount_cents`. */
export const MAX_AMOUNT_CENTS = 9_999_999;

/** The failure code of every payload a handler rejects. */
export const INVALID_PAYLOAD = 'invalid_payload';

/**
 * `amount_cents`: a JSON integer from {@link MIN_AMOUNT_CENTS} to {@link MAX_AMOUNT_CENTS}.
 * `z.int()` only accepts a `number` that is a safe integer, so booleans, strings,
 * {@link JsonFloat} values and bigints all fail; nothing is coerced.
 */
export const amountCentsSchema = z.int().min(MIN_AMOUNT_CENTS).max(MAX_AMOUNT_CENTS);

/**
 * `category`: first a string, then a member of `categories`. The string check runs
 * first, so an array, object or number is a validation issue, never a TypeError.
 */
export function categorySchema<const C extends readonly [string, ...string[]]>(categories: C) {
  return z.string().pipe(z.enum(categories));
}

/**
 * The payload schema of one handler version. `z.object` (not `z.strictObject`): other
 * payload fields are ignored, so newer producers can add fields (forward compatible).
 */
export function payloadSchema<const C extends readonly [string, ...string[]]>(categories: C) {
  return z.object({ category: categorySchema(categories), amount_cents: amountCentsSchema });
}

/**
 * A short, readable rendering of a payload value for error details: strings quoted
 * (and shortened), floats as written (`100.0`), containers by kind.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const quoted = JSON.stringify(value);
    return quoted.length > 42 ? `${quoted.slice(0, 40)}…"` : quoted;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (value instanceof JsonFloat) return value.toString();
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return typeof value;
}

function hasOwn(payload: object, key: string): boolean {
  return Object.hasOwn(payload, key);
}

/**
 * Why `payload` is not acceptable to handler `version`, as one short sentence, or
 * `null` if it is acceptable. Category problems are reported before amount problems.
 */
export function rejectionDetail(
  version: string,
  categories: readonly string[],
  payload: unknown,
): string | null {
  const known = categories.join(', ');
  if (!isPlainRecord(payload)) {
    return `payload must be a JSON object, got ${describeValue(payload)}`;
  }
  const record = payload;
  const category = hasOwn(record, 'category') ? record.category : undefined;
  if (category === undefined) {
    return `category is missing (handler ${version} knows ${known})`;
  }
  if (typeof category !== 'string') {
    return `category must be a string, got ${describeValue(category)}`;
  }
  if (!categories.includes(category)) {
    return `category ${describeValue(category)} is not known to handler ${version} (${known})`;
  }
  const amount = hasOwn(record, 'amount_cents') ? record.amount_cents : undefined;
  const range = `an integer from ${MIN_AMOUNT_CENTS} to ${MAX_AMOUNT_CENTS}`;
  if (amount === undefined) return `amount_cents is missing (must be ${range})`;
  if (!amountCentsSchema.safeParse(amount).success) {
    return `amount_cents must be ${range}, got ${describeValue(amount)}`;
  }
  return null;
}

/**
 * Build a handler that accepts `categories` and a valid `amount_cents`, returning the
 * effect `{ category, amountCents }`; any other payload throws
 * `PermanentFailure('invalid_payload', detail)`. Fields other than `category` and
 * `amount_cents` are ignored.
 */
export function makeHandler<const C extends readonly [string, ...string[]]>(
  version: string,
  categories: C,
): Handler {
  const schema = payloadSchema(categories);
  return (payload: JsonObject): Effect => {
    const result = schema.safeParse(payload);
    // Only own properties count (a payload never inherits business fields), so the
    // readable check also has a say even when zod is satisfied.
    const detail = rejectionDetail(version, categories, payload);
    if (result.success && detail === null) {
      return { category: result.data.category, amountCents: result.data.amount_cents };
    }
    const zodReason = result.success ? 'invalid' : (result.error.issues[0]?.message ?? 'invalid');
    throw new PermanentFailure(
      INVALID_PAYLOAD,
      detail ?? `payload rejected by handler ${version}: ${zodReason}`,
    );
  };
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof JsonFloat)
  );
}
