/** Plain aligned tables for the demo's snapshots. */
import type { StatusReport } from '@onceq/core';
import { reportedStates } from '@onceq/core/admin';
import { textTable } from '@onceq/core/internal';

/** `rows` under `header`: the first column left, the others right. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return textTable(
    [header, ...rows],
    header.map((_, i) => (i === 0 ? 'left' : 'right')),
  );
}

/** A snapshot as two tables: messages by state, then effects by category with the total. */
export function snapshotLines(title: string, report: StatusReport): string[] {
  const states = table(
    ['state', 'messages'],
    reportedStates(report.messages).map((s) => [s, String(report.messages[s])]),
  );
  const categories = Object.keys(report.totals).sort();
  const money = table(
    ['category', 'amount_cents'],
    [
      ...categories.map((c) => [c, String(report.totals[c])]),
      [`total (${report.effects} effect${report.effects === 1 ? '' : 's'})`, String(report.total)],
    ],
  );
  return [
    '',
    `── ${title} ──`,
    ...states.map((l) => `  ${l}`),
    '',
    ...money.map((l) => `  ${l}`),
    '',
  ];
}
