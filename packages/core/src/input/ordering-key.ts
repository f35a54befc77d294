/**
 * Ordering keys on enqueue's input (docs/ordering.md): a key given with each event, one
 * key for a whole batch, or a field of each payload (`--key-field customer.id`). The
 * JSONL line itself stays exactly `{event_id, payload}`: a key from a line comes from its
 * payload.
 */
import { type BatchIssue, BatchRejectedError } from '../errors.ts';
import type { BatchEntry, ParsedBatch } from './batch.ts';
import { isJsonObject, JsonFloat, type JsonValue } from './json-value.ts';
import { parseJson } from './parse-json.ts';

/** The longest ordering key, in characters (the column's CHECK). */
export const MAX_KEY_LENGTH = 200;

/** Why `key` cannot be an ordering key, or null when it can. */
export function keyRefusal(key: string): string | null {
  if (key.length === 0) return 'the ordering key is empty';
  if (key.length > MAX_KEY_LENGTH) {
    return `the ordering key is ${key.length} characters, the limit is ${MAX_KEY_LENGTH}`;
  }
  return null;
}

/** How enqueue gives a batch's events their ordering keys. */
export interface KeyOptions {
  /** One key for every event of the batch that does not carry its own. */
  readonly key?: string;
  /**
   * A dotted path into each payload (`customer.id`) whose value is the event's key: a
   * string, or a number or boolean as its JSON text. A line where it is missing (or
   * `null`) or not a scalar rejects the batch, naming the line, unless
   * {@link keyFieldOptional}.
   */
  readonly keyField?: string;
  /** A payload without the field gives an event without a key instead of a rejection. */
  readonly keyFieldOptional?: boolean;
}

/**
 * `batch` with every entry's key set as `options` say (the entries are copied; `batch`
 * is not changed).
 *
 * @throws BatchRejectedError naming every line whose key is missing, not a scalar or
 *   refused; nothing written.
 */
export function assignKeys(batch: ParsedBatch, options: KeyOptions): ParsedBatch {
  const { key, keyField } = options;
  if (key === undefined && keyField === undefined) return batch;
  if (key !== undefined && keyField !== undefined) {
    throw new TypeError('enqueue: give key or keyField, not both');
  }
  const unit = batch.unit ?? 'line';
  if (key !== undefined) {
    const refused = keyRefusal(key);
    if (refused !== null) throw new BatchRejectedError([{ line: 0, reason: refused }], { unit });
    return { ...batch, entries: batch.entries.map((e) => (e.key ? e : { ...e, key })) };
  }
  const path = (keyField as string).split('.');
  if (path.some((part) => part.length === 0)) {
    throw new TypeError(`enqueue: the key field ${JSON.stringify(keyField)} has an empty part`);
  }
  const issues: BatchIssue[] = [];
  const entries: BatchEntry[] = [];
  for (const entry of batch.entries) {
    const found = fieldText(parseJson(entry.payload), path);
    if (typeof found === 'object') {
      const refused = keyRefusal(found.text);
      if (refused === null) entries.push({ ...entry, key: found.text });
      else issues.push({ line: entry.line, reason: `${keyField}: ${refused}` });
    } else if (found === 'missing' && options.keyFieldOptional === true) {
      entries.push(entry);
    } else {
      issues.push({
        line: entry.line,
        reason:
          found === 'missing'
            ? `the payload has no ${keyField} for the ordering key`
            : `the payload's ${keyField} is not a string, number or boolean, so it cannot be an ordering key`,
      });
    }
  }
  if (issues.length > 0) throw new BatchRejectedError(issues.slice(0, 20), { unit });
  return { ...batch, entries };
}

/** The scalar at `path` as key text, or why there is none. */
function fieldText(
  payload: JsonValue,
  path: readonly string[],
): { text: string } | 'missing' | 'not-scalar' {
  let value: JsonValue | undefined = payload;
  for (const part of path) {
    if (!isJsonObject(value)) return 'missing';
    value = Object.hasOwn(value, part) ? value[part] : undefined;
  }
  if (value === undefined || value === null) return 'missing';
  if (typeof value === 'string') return { text: value };
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return { text: String(value) };
  }
  if (value instanceof JsonFloat) return { text: value.toString() };
  return 'not-scalar';
}
