/**
 * Output helpers: one JSON document for machines (`--json`), aligned tables for people.
 */

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

export type Align = 'left' | 'right';

/**
 * Rows padded into columns separated by two spaces. Columns are left-aligned unless
 * `align` says otherwise; trailing spaces are trimmed.
 */
export function table(
  rows: readonly (readonly (string | number)[])[],
  align: Align[] = [],
): string[] {
  const cells = rows.map((row) => row.map(String));
  const widths: number[] = [];
  for (const row of cells) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return cells.map((row) =>
    row
      .map((cell, i) =>
        align[i] === 'right' ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd(),
  );
}

/** `1 message`, `2 messages`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
