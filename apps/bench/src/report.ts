/** Plain-text tables for the terminal and the JSON results file. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmtMs, fmtRate, type Spread } from './util.ts';

/** Renders rows as an aligned table; numbers-looking cells are right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = (s: string) => /^[\d,.–\-×%<>≥ ]+[a-z%×]*$/i.test(s) && /\d/.test(s);
  const fmt = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric(c) ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt)].join('\n');
}

/** `median (min–max)` of a rate. */
export function rateCell(s: Spread): string {
  if (s.n === 0) return '–';
  if (s.n === 1) return fmtRate(s.median);
  return `${fmtRate(s.median)} (${fmtRate(s.min)}–${fmtRate(s.max)})`;
}

export function msCell(s: Spread): string {
  if (s.n === 0) return '–';
  if (s.n === 1) return fmtMs(s.median);
  return `${fmtMs(s.median)} (${fmtMs(s.min)}–${fmtMs(s.max)})`;
}

export function section(title: string): string {
  return `\n== ${title}\n`;
}

/** Writes the results under `<root>/bench-results/` and returns the path. */
export function writeJson(root: string, data: unknown): string {
  const dir = join(root, 'bench-results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `bench-${stamp}.json`);
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
  writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(data, null, 2)}\n`);
  return path;
}
