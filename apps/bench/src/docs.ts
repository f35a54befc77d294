/**
 * `bun run bench --write-docs`: docs/benchmarks.md, written from this run's report.
 * The page holds the command, the machine and the date, then every section's
 * table as printed (a line `![title](file.svg)` is a chart the section wrote into
 * docs/), then each missed target in one line. Figures live only here, so
 * the README and the other pages link to this page instead of quoting numbers.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TargetRow } from './context.ts';

export interface RunFacts {
  /** The command line, as a user would type it. */
  command: string;
  machine: string;
  date: string;
}

/** The heading of the page's list of missed targets. */
export const MISSED_HEADING = '## Targets missed in this run';

/** One missed target in that list. */
export const missedLine = (target: string, measured: string) => `- ${target}: ${measured}`;

interface Miss {
  target: string;
  measured: string;
}

/** Renders the page: the report's `== Title` sections become headings over a code block. */
export function benchmarksPage(facts: RunFacts, report: readonly string[], misses: Miss[]): string {
  const lines = [
    '# Benchmarks',
    '',
    'Written by `bun run bench --write-docs`; re-run it to refresh this page. Every table',
    'puts onceq next to its reference from the same run: a bare protocol on the same',
    'database (the floor of the work onceq does) and, in the anchors section, other queues',
    'doing the same work. Figures move with the machine and its load: compare rows of one',
    'run, not runs of different days. A run of some sections (`--only … --write-docs`)',
    'rewrites just those, each then naming its run, and the rows of the targets it measured.',
    '',
    `- command: \`${facts.command}\``,
    `- machine: ${facts.machine}`,
    `- date: ${facts.date}`,
  ];
  let block: string[] = [];
  const flush = () => {
    while (block.length > 0 && block[0]?.trim() === '') block.shift();
    while (block.length > 0 && block.at(-1)?.trim() === '') block.pop();
    if (block.length > 0) lines.push('', '```text', ...block, '```');
    block = [];
  };
  for (const chunk of report) {
    for (const line of chunk.split('\n')) {
      // A chart the section wrote beside the page: markdown, not part of a code block.
      if (/^!\[[^\]]*\]\([^)]+\)$/.test(line)) {
        flush();
        lines.push('', line);
        continue;
      }
      const heading = /^== (.+)$/.exec(line);
      if (heading === null) {
        block.push(line);
        continue;
      }
      flush();
      lines.push('', `## ${heading[1]}`);
    }
  }
  flush();
  lines.push('', MISSED_HEADING, '');
  if (misses.length === 0) lines.push('None.');
  for (const m of misses) lines.push(missedLine(m.target, m.measured));
  return `${lines.join('\n')}\n`;
}

/** The targets this run missed, from the targets table and the reference table. */
export function missedTargets(
  targets: readonly TargetRow[],
  results: Record<string, unknown>,
): Miss[] {
  const referenced =
    (results.referenceTargets as
      | { target: string; onceq: string; reference: string; met: boolean | null }[]
      | undefined) ?? [];
  return [
    ...targets.filter((t) => t.met === false),
    ...referenced
      .filter((r) => r.met === false)
      .map((r) => ({ target: r.target, measured: `${r.onceq} against ${r.reference}` })),
  ];
}

/** The page as it is, or null when there is none yet. */
export function readBenchmarksPage(root: string): string | null {
  const path = join(root, 'docs', 'benchmarks.md');
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

export function writeBenchmarksPage(root: string, page: string): string {
  const path = join(root, 'docs', 'benchmarks.md');
  writeFileSync(path, page);
  return path;
}
