import { printable } from './printable.ts';

/** Where a cell sits in its column: `left` pads after it, `right` before it. */
export type Align = 'left' | 'right';

/** Per column (a missing entry is `left`), or per cell from its text and column index. */
export type Alignment = readonly Align[] | ((cell: string, column: number) => Align);

/** What else {@link textTable} draws. */
export interface TextTableOptions {
  /** A line of dashes under the first row (the header), each as wide as its column. Default false. */
  rule?: boolean;
}

/**
 * Rows padded into columns separated by two spaces, trailing spaces trimmed, one string
 * per line: the one text table of the CLI, the demo and the bench. Cells sit `left`
 * unless `align` says otherwise. Every cell goes through {@link printable}, so a newline
 * or a bidi override in a payload or an error detail cannot start a line of its own or
 * reorder the row.
 */
export function textTable(
  rows: readonly (readonly (string | number)[])[],
  align: Alignment = [],
  options: TextTableOptions = {},
): string[] {
  const cells = rows.map((row) => row.map((cell) => printable(String(cell))));
  const widths: number[] = [];
  for (const row of cells) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  const alignOf =
    typeof align === 'function' ? align : (_: string, column: number) => align[column] ?? 'left';
  const lines = cells.map((row) =>
    row
      .map((cell, i) =>
        alignOf(cell, i) === 'right' ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd(),
  );
  if (options.rule === true && lines.length > 0) {
    lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  }
  return lines;
}
