/** Plain-text tables for the terminal and the JSON results file. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { textTable } from '@onceq/core/internal';
import { fmtMs, fmtRate, type Spread } from './util.ts';

/** Cells that read as figures (`1,234`, `0.95×`, `12 ms`) sit right in their column. */
function figureRight(cell: string): 'left' | 'right' {
  return /^[\d,.–\-×%<>≥ ]+[a-z%×]*$/i.test(cell) && /\d/.test(cell) ? 'right' : 'left';
}

/** `rows` under `header` and a rule of dashes, figures right-aligned: one string. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return textTable([header, ...rows], figureRight, { rule: true }).join('\n');
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
