/**
 * Shared business-rule building blocks (docs/protocol.md §3): zod schemas for the payload fields
 * and {@link makeHandler}, which turns a version's category list into an {@link EffectHandler}.
 *
 * Payloads arrive from onceq's strict JSON parser, so numbers keep their kind: an
 * integer lexeme is a `number` (or a `bigint` beyond 2^53) and a float lexeme
 * (`100.0`, `1e2`) is a {@link JsonFloat}. Nothing here coerces: `true`, `"100"`,
 * `100.0` and an out-of-range bigint are all rejected.
 */

import {
  type Effect,
  type HandlerContext,
  JsonFloat,
  type JsonObject,
  PermanentFailure,
} from '@onceq/core';
import { z } from 'zod';

/** Smallest accepted `amount_cents`. */
export const MIN_AMOUNT_CENTS = 1;
/** Largest accepted `amount_cents`. */
export const MAX_AMOUNT_CENTS = 9_999_999;

/** The failure code of every payload a handler rejects. */
export const INVALID_PAYLOAD = 'invalid_payload';

const AMOUNT_RANGE = `an integer from ${MIN_AMOUNT_CENTS} to ${MAX_AMOUNT_CENTS}`;
const amountMissingOr = (input: unknown) =>
  input === undefined
    ? `amount_cents is missing (must be ${AMOUNT_RANGE})`
    : `amount_cents must be ${AMOUNT_RANGE}, got ${describeValue(input)}`;

/**
 * `amount_cents`: a JSON integer from {@link MIN_AMOUNT_CENTS} to {@link MAX_AMOUNT_CENTS}.
 * `z.int()` only accepts a `number` that is a safe integer, so booleans, strings,
 * {@link JsonFloat} values and bigints all fail; nothing is coerced. Each issue's message
 * is the sentence a rejected payload reports.
 */
export const amountCentsSchema = z
  .int({ error: (issue) => amountMissingOr(issue.input) })
  .min(MIN_AMOUNT_CENTS, { error: (issue) => amountMissingOr(issue.input) })
  .max(MAX_AMOUNT_CENTS, { error: (issue) => amountMissingOr(issue.input) });

/**
 * `category`: first a string, then a member of `categories`. The string check runs
 * first, so an array, object or number is a validation issue, never a TypeError. The
 * messages name handler `version` and what it knows.
 */
export function categorySchema<const C extends readonly [string, ...string[]]>(
  version: string,
  categories: C,
) {
  const known = categories.join(', ');
  return z
    .string({
      error: (issue) =>
        issue.input === undefined
          ? `category is missing (handler ${version} knows ${known})`
          : `category must be a string, got ${describeValue(issue.input)}`,
    })
    .pipe(
      z.enum(categories, {
        error: (issue) =>
          `category ${describeValue(issue.input)} is not known to handler ${version} (${known})`,
      }),
    );
}

/**
 * The payload schema of handler `version`, the one place its rules are checked: a plain
 * JSON object, then `category` (reported first), then `amount_cents`. Only own
 * properties count (a payload never inherits business fields); other fields are ignored,
 * so newer producers can add fields (forward compatible). The first issue's message is
 * the one-sentence detail of the rejection.
 */
export function payloadSchema<const C extends readonly [string, ...string[]]>(
  version: string,
  categories: C,
) {
  return z
    .custom<Record<string, unknown>>(isPlainRecord, {
      error: (issue) => `payload must be a JSON object, got ${describeValue(issue.input)}`,
    })
    .transform((record) => ({
      category: Object.hasOwn(record, 'category') ? record.category : undefined,
      amount_cents: Object.hasOwn(record, 'amount_cents') ? record.amount_cents : undefined,
    }))
    .pipe(
      z.object({
        category: categorySchema(version, categories),
        amount_cents: amountCentsSchema,
      }),
    );
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

/**
 * Build a handler that accepts `categories` and a valid `amount_cents`, returning the
 * effect `{ category, amountCents }`; any other payload throws
 * `PermanentFailure('invalid_payload', detail)`, the detail being the first issue
 * {@link payloadSchema} found. Fields other than `category` and `amount_cents` are
 * ignored.
 */
/**
 * A lesson handler: synchronous, returns the money effect `{ category, amountCents }` or
 * throws. Every one is an `@onceq/core` `Handler`.
 */
export type EffectHandler = (
  payload: JsonObject,
  context: Pick<HandlerContext, 'eventId' | 'attempt' | 'generation'>,
) => Effect;

export function makeHandler<const C extends readonly [string, ...string[]]>(
  version: string,
  categories: C,
): EffectHandler {
  const schema = payloadSchema(version, categories);
  return (payload: JsonObject): Effect => {
    const result = schema.safeParse(payload);
    if (result.success) {
      return { category: result.data.category, amountCents: result.data.amount_cents };
    }
    const detail = result.error.issues[0]?.message ?? `payload rejected by handler ${version}`;
    throw new PermanentFailure(INVALID_PAYLOAD, detail);
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
