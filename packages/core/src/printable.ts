/**
 * Text that came from outside (a payload value, a handler's error message, a category)
 * made safe to show in a terminal, a log line or a page: control characters (C0, DEL,
 * C1), Unicode bidirectional controls and the line and paragraph separators are written
 * as `\uXXXX` escapes (`\n` as `\n`, `\r` as `\r`, `\t` as `\t`). No value can then start
 * a new log line that looks like onceq's own, or reorder the text around it (a
 * right-to-left override turns an amount `100` into `001` on screen).
 */

/** Controls (C0, DEL, C1: `\p{Cc}`), bidi marks, embeddings, overrides and isolates, line separators. */
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeChar(c: string): string {
  return SHORT[c] ?? `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every control, bidi control and line separator escaped. With
 * `keepLineBreaks`, `\n` and `\t` stay (for multi-line text shown as a block).
 */
export function printable(text: string, keepLineBreaks = false): string {
  return text.replace(UNSAFE, (c) =>
    keepLineBreaks && (c === '\n' || c === '\t') ? c : escapeChar(c),
  );
}
