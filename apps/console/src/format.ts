/**
 * How values read on a page: times in local time and relative to now, durations, and
 * payloads printed from the stored canonical text (never through `JSON.parse`, which
 * would turn `10000.0` into `10000`).
 */
import { JsonFloat } from '@onceq/core';
import {
  localTime as coreLocalTime,
  isJsonObject,
  type JsonValue,
  parseJson,
  relativeTime,
} from '@onceq/core/internal';
import { type Html, html } from './html.ts';

/** What a hidden payload field shows instead of its value. */
export const HIDDEN = '(hidden)';

/** `2026-11-30 09:12:03` in the server's local time zone, with its UTC offset. */
export function localTime(at: number): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const offset = -new Date(at * 1000).getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const zone = `UTC${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${coreLocalTime(at)} ${zone}`;
}

/**
 * A `<time>` element: local time and "3 h ago". The client script rewrites the local
 * part in the browser's own time zone (the `datetime` attribute carries the instant).
 */
export function timeCell(at: number, now: number): Html {
  const iso = new Date(at * 1000).toISOString();
  return html`<time datetime="${iso}" data-local>${localTime(at)}</time> <span class="rel">(${relativeTime(at, now)})</span>`;
}

function hide(value: JsonValue, hidden: ReadonlySet<string>): JsonValue {
  if (hidden.size === 0) return value;
  if (Array.isArray(value)) return value.map((v) => hide(v, hidden));
  if (isJsonObject(value)) {
    const out: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(value)) out[k] = hidden.has(k) ? HIDDEN : hide(v, hidden);
    return out;
  }
  return value;
}

function scalar(value: JsonValue): string {
  if (value instanceof JsonFloat) return value.toString();
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value);
}

function pretty(value: JsonValue, indent: string): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = `${indent}  `;
    return `[\n${value.map((v) => inner + pretty(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (isJsonObject(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    const inner = `${indent}  `;
    const body = entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pretty(v, inner)}`);
    return `{\n${body.join(',\n')}\n${indent}}`;
  }
  return scalar(value);
}

function compact(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(compact).join(',')}]`;
  if (isJsonObject(value)) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${compact(v)}`)
      .join(',')}}`;
  }
  return scalar(value);
}

/**
 * The stored canonical payload, indented, with `hidden` field names (at any depth)
 * replaced by {@link HIDDEN}. Floats print as their canonical lexeme (`10000.0`).
 */
export function prettyPayload(canonicalText: string, hidden: ReadonlySet<string>): string {
  return pretty(hide(parseJson(canonicalText), hidden), '');
}

/** The payload on one line, cut to `max` characters with an ellipsis (for lists). */
export function shortPayload(canonicalText: string, hidden: ReadonlySet<string>, max = 80): string {
  const text = hidden.size === 0 ? canonicalText : compact(hide(parseJson(canonicalText), hidden));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
