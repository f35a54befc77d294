/**
 * Event objects as enqueue input, validated by the rules of the JSONL envelope
 * (docs/protocol.md §2) so that an object and its JSONL line store the same canonical
 * payload: at most 1000 events, each exactly `{ eventId, payload }`, the id fitting the
 * store's policy, the payload a plain object whose canonical form is at most 10,000
 * bytes, nested at most 64 levels, with no lone surrogate in any string.
 *
 * Numbers: a JS number cannot say whether it was written `1` or `1.0`. An integer
 * `number` (a safe integer) is an integer, any other finite `number` a float; to store
 * a float with an integral value (`10000.0`) pass a {@link JsonFloat}, and integers
 * beyond 2^53 as `bigint`. `NaN`, `Infinity`, `undefined`, functions, symbols, dates,
 * maps and class instances are refused, never silently dropped.
 */
import { BatchRejectedError } from '../errors.ts';
import { BatchCollector, MAX_BATCH_LINES, MAX_PAYLOAD_BYTES, type ParsedBatch } from './batch.ts';
import { canonicalize } from './canonical.ts';
import { type IdPolicy, idMatcher, idRefusal, LESSON_POLICY } from './id-policy.ts';
import { JsonFloat, type JsonObject, type JsonValue } from './json-value.ts';
import { keyRefusal } from './ordering-key.ts';

/** One event as an object: what a JSONL line `{"event_id":…,"payload":…}` says. */
export interface EventInput {
  readonly eventId: string;
  /** A plain object; see the module's note on numbers. */
  readonly payload: { readonly [key: string]: unknown };
  /**
   * The event's ordering key (docs/ordering.md): events of one key are handed out one at
   * a time, in enqueue order. 1 to 200 characters. None: the event has no order.
   */
  readonly key?: string;
}

/** In `u` mode a surrogate pair is one code point: this matches only a lone half. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Nesting deeper than this is refused, as the strict parser refuses it. */
const MAX_DEPTH = 64;

/**
 * Validates event objects and returns them as a parsed batch (entries with canonical
 * payloads, in input order; a repeat with the same payload counted as a duplicate).
 * Issues name the event by its 1-based position in `events`.
 *
 * @throws BatchRejectedError listing every bad event, nothing written.
 */
export function parseEvents(
  events: readonly EventInput[],
  idPolicy: IdPolicy = LESSON_POLICY,
): ParsedBatch {
  if (!Array.isArray(events)) {
    throw new TypeError('enqueue: events must be an array of { eventId, payload }');
  }
  if (events.length === 0) {
    throw new BatchRejectedError([{ line: 0, reason: 'the batch has no events' }], {
      unit: 'event',
    });
  }
  if (events.length > MAX_BATCH_LINES) {
    throw new BatchRejectedError(
      [
        {
          line: 0,
          reason: `the batch has ${events.length} events, the limit is ${MAX_BATCH_LINES}`,
        },
      ],
      { unit: 'event' },
    );
  }
  const fits = idMatcher(idPolicy);
  const collected = new BatchCollector('event');
  events.forEach((event, index) => {
    collected.add(index + 1, eventEntry(event, fits, idPolicy));
  });
  return collected.batch(events.length);
}

function eventEntry(
  event: unknown,
  fits: (id: string) => boolean,
  idPolicy: IdPolicy,
): { eventId: string; payload: string; key?: string } | string {
  if (!isPlainObject(event)) return 'an event must be an object { eventId, payload }';
  for (const key of Object.keys(event)) {
    if (key !== 'eventId' && key !== 'payload' && key !== 'key') {
      return `unexpected key ${JSON.stringify(key)} (an event has eventId, payload and an optional key)`;
    }
  }
  const { eventId, payload, key } = event as {
    eventId?: unknown;
    payload?: unknown;
    key?: unknown;
  };
  if (typeof eventId !== 'string') return `eventId must be a string, not ${kindOf(eventId)}`;
  if (!fits(eventId)) return idRefusal(eventId, idPolicy);
  if (key !== undefined) {
    if (typeof key !== 'string') return `key must be a string, not ${kindOf(key)}`;
    const refused = keyRefusal(key);
    if (refused !== null) return refused;
  }
  if (!isPlainObject(payload)) return `payload must be a plain object, not ${kindOf(payload)}`;
  const value = jsonValue(payload, 1);
  if (typeof value === 'string') return `payload ${value}`;
  const text = canonicalize(value.value);
  if (text.length * 3 > MAX_PAYLOAD_BYTES) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_PAYLOAD_BYTES) {
      return `payload is ${bytes} bytes in canonical form, the limit is ${MAX_PAYLOAD_BYTES}`;
    }
  }
  return key === undefined ? { eventId, payload: text } : { eventId, payload: text, key };
}

/** `value` as a {@link JsonValue}, or why it is not one (a phrase naming the path). */
function jsonValue(value: unknown, depth: number, path = ''): { value: JsonValue } | string {
  switch (typeof value) {
    case 'string':
      return !LONE_SURROGATE.test(value) ? { value } : `${where(path)}holds a lone surrogate`;
    case 'boolean':
    case 'bigint':
      return { value };
    case 'number':
      if (!Number.isFinite(value)) return `${where(path)}is ${value}, which JSON cannot carry`;
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        return `${where(path)}is the integer ${value}, beyond 2^53: pass it as a bigint`;
      }
      return { value: Number.isInteger(value) ? value : new JsonFloat(value) };
    case 'object': {
      if (value === null) return { value: null };
      if (value instanceof JsonFloat) {
        return Number.isFinite(value.value)
          ? { value }
          : `${where(path)}is the float ${value.value}, which JSON cannot carry`;
      }
      if (depth > MAX_DEPTH) return `${where(path)}is nested deeper than ${MAX_DEPTH} levels`;
      if (Array.isArray(value)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < value.length; i++) {
          const item = jsonValue(value[i], depth + 1, `${path}[${i}]`);
          if (typeof item === 'string') return item;
          out.push(item.value);
        }
        return { value: out };
      }
      if (!isPlainObject(value)) return `${where(path)}is ${kindOf(value)}, not a JSON value`;
      const out: JsonObject = {};
      for (const key of Object.keys(value)) {
        if (LONE_SURROGATE.test(key)) return `${where(path)}has a key with a lone surrogate`;
        const item = jsonValue(
          (value as Record<string, unknown>)[key],
          depth + 1,
          `${path}.${key}`,
        );
        if (typeof item === 'string') return item;
        out[key] = item.value;
      }
      return { value: out };
    }
    default:
      return `${where(path)}is ${kindOf(value)}, not a JSON value`;
  }
}

function where(path: string): string {
  return path === '' ? '' : `field ${path.startsWith('.') ? path.slice(1) : path} `;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = (value as object).constructor?.name;
    return name && name !== 'Object' ? `a ${name}` : 'an object';
  }
  return `a ${typeof value}`;
}
