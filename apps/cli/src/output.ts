/**
 * Output helpers: one JSON document for machines (`--json`), aligned tables for people.
 */
import { localTime, relativeTime } from '@onceq/core/internal';

/** JSON text inserted verbatim into a document: a stored canonical payload, so `10000.0` stays `10000.0`. */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * Compact JSON of `value`; {@link RawJson} nodes are copied as they are. Never round-trip a
 * payload through `JSON.parse`/`JSON.stringify`: that turns `10000.0` into `10000`.
 */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (typeof value === 'object') {
    const parts: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) parts.push(`${JSON.stringify(key)}:${toJson(item)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The one text table (core's), under the name the commands use. */
export { type Align, textTable as table } from '@onceq/core/internal';

/** `1 message`, `2 messages`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/**
 * A Unix time for people: local date and time, then how far from `now`
 * (`2026-11-30 09:12:03 (in 30 s)`). `--json` keeps the epoch seconds instead.
 */
export function humanTime(epochSeconds: number, now: number): string {
  return `${localTime(epochSeconds)} (${relativeTime(epochSeconds, now)})`;
}

/** Payloads in tables stop at this many characters; `onceq show <id>` prints them whole. */
export const TABLE_PAYLOAD_CHARS = 60;

/** `text` cut to `max` characters, the cut marked with `…`. */
export function truncate(text: string, max = TABLE_PAYLOAD_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** `1234567` → `1,234,567`: every number of 4+ digits in a sentence, for sizes. */
export function thousands(text: string): string {
  // Only free-standing numbers: never an event id (`event_id 883421`, `orders-17:883421`)
  // nor part of a date or time.
  return text.replace(/(?<![\w.:/+-])(?<!event_id )\d{4,}(?![\w.:/+-])/g, (n) =>
    Number(n).toLocaleString('en-US'),
  );
}
