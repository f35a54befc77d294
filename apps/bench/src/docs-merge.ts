/**
 * `bun run bench --only … --write-docs`: a run of some sections rewrites those sections
 * of docs/benchmarks.md, each then naming the run that measured it, and the rows of the
 * targets it measured (a target it did not measure keeps its row); the list of missed
 * targets is drawn again from the merged tables. Every other section stays as the run
 * named at the top of the page measured it.
 */
import { MISSED_HEADING, missedLine } from './docs.ts';
import { table } from './report.ts';

interface Section {
  /** The `## …` line. */
  heading: string;
  /** The lines up to the next heading. */
  lines: string[];
}

interface Page {
  head: string[];
  sections: Section[];
}

const TARGETS_HEADING = '## Targets';
const REFERENCE_HEADING = '## Targets, each next to its reference from this run';

const TARGET_HEADINGS = new Set([TARGETS_HEADING, REFERENCE_HEADING, MISSED_HEADING]);
const WHY = 'why, and what would close it:';

function splitPage(text: string): Page {
  const page: Page = { head: [], sections: [] };
  for (const line of text.replace(/\n$/, '').split('\n')) {
    if (line.startsWith('## ')) page.sections.push({ heading: line, lines: [] });
    else (page.sections.at(-1)?.lines ?? page.head).push(line);
  }
  return page;
}

function joinPage(page: Page): string {
  const sections = page.sections.flatMap((s) => [s.heading, ...s.lines]);
  return `${[...page.head, ...sections].join('\n')}\n`;
}

interface Table {
  header: string[];
  rows: string[][];
  /** Where the table's lines start and end (exclusive) in its section's lines. */
  start: number;
  end: number;
}

/** The table of a section, read by the columns its rule line of dashes draws. */
function readTable(lines: readonly string[]): Table | null {
  const rule = lines.findIndex((line) => /^-+( {2}-+)*$/.test(line));
  if (rule < 1) return null;
  const starts = [...(lines[rule] as string).matchAll(/-+/g)].map((m) => m.index);
  const cells = (line: string) => starts.map((start, i) => line.slice(start, starts[i + 1]).trim());
  let end = rule + 1;
  while (end < lines.length && lines[end] !== '' && lines[end] !== '```') end++;
  return {
    header: cells(lines[rule - 1] as string),
    rows: lines.slice(rule + 1, end).map(cells),
    start: rule - 1,
    end,
  };
}

/** A row this run measured: its last column says whether the target was met. */
const measured = (row: readonly string[]) => row.at(-1) === 'yes' || row.at(-1) === 'NO';

/**
 * What names a target or a section across runs of other sizes and labels: the text
 * without its parentheses and with every number the same (a run of 100 keys measures
 * the target a run of 1,000 keys did; both ids' rows measure the one row before ids).
 */
function sameThing(text: string): string {
  return text
    .replace(/\([^)]*\)/g, '')
    .replace(/[\d][\d,.]*/g, '#')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * `kept`'s table with the rows of `fresh`'s table this run measured in place of every
 * row of the same targets (where the first of those stood, or after the rest); the
 * targets of the rows it took out.
 */
function mergeRows(kept: Section, fresh: Section): Set<string> {
  const old = readTable(kept.lines);
  const now = readTable(fresh.lines);
  const removed = new Set<string>();
  if (old === null || now === null) return removed;
  const rows = now.rows.filter(measured);
  const names = new Set(rows.map((row) => sameThing(row[0] as string)));
  const merged: string[][] = [];
  let placed = false;
  for (const row of old.rows) {
    if (!names.has(sameThing(row[0] as string))) {
      merged.push(row);
      continue;
    }
    removed.add(row[0] as string);
    if (!placed) merged.push(...rows);
    placed = true;
  }
  if (!placed) merged.push(...rows);
  kept.lines.splice(old.start, old.end - old.start, ...table(old.header, merged).split('\n'));
  return removed;
}

/**
 * The reference table's lines of explanation (`- target: why`): those of the `removed`
 * targets out, `fresh`'s in.
 */
function mergeWhy(kept: Section, fresh: Section, removed: ReadonlySet<string>): void {
  const about = (targets: Iterable<string>) => (line: string) =>
    [...targets].some((t) => line.startsWith(`- ${t}: `));
  kept.lines = kept.lines.filter((line) => !about(removed)(line));
  const now = readTable(fresh.lines);
  const added = fresh.lines.filter(
    about((now?.rows ?? []).filter(measured).map((r) => r[0] as string)),
  );
  if (added.length === 0) return;
  if (!kept.lines.includes(WHY)) {
    const close = kept.lines.lastIndexOf('```');
    kept.lines.splice(close < 0 ? kept.lines.length : close, 0, '', WHY);
  }
  let at = kept.lines.indexOf(WHY) + 1;
  while (at < kept.lines.length && kept.lines[at]?.startsWith('- ')) at++;
  kept.lines.splice(at, 0, ...added);
}

/** The missed targets, one line each, from the merged tables. */
function missedLines(page: Page): string[] {
  const tableOf = (heading: string) => {
    const s = page.sections.find((section) => section.heading === heading);
    return s === undefined ? null : readTable(s.lines);
  };
  const lines: string[] = [];
  for (const row of tableOf(TARGETS_HEADING)?.rows ?? []) {
    if (row.at(-1) === 'NO') lines.push(missedLine(row[0] as string, row[1] as string));
  }
  for (const row of tableOf(REFERENCE_HEADING)?.rows ?? []) {
    if (row.at(-1) === 'NO')
      lines.push(missedLine(row[0] as string, `${row[1]} against ${row[2]}`));
  }
  return lines.length === 0 ? ['None.'] : lines;
}

/**
 * `existing` (the page as it is) with what `fresh` (this run's page) measured: its
 * sections, marked with `provenance`, and its targets' rows. The head's text is
 * `fresh`'s, its command, machine and date those of the run that wrote the page whole.
 */
export function mergeBenchmarksPage(existing: string, fresh: string, provenance: string): string {
  const page = splitPage(existing);
  const run = splitPage(fresh);
  const isFact = (line: string) => /^- (command|machine|date): /.test(line);
  const facts = page.head.filter(isFact);
  const at = run.head.findIndex(isFact);
  if (at >= 0 && facts.length > 0) {
    page.head = [
      ...run.head.slice(0, at),
      ...facts,
      ...run.head.slice(at).filter((l) => !isFact(l)),
    ];
  }
  const targetsAt = () => {
    const at = page.sections.findIndex((s) => TARGET_HEADINGS.has(s.heading));
    return at < 0 ? page.sections.length : at;
  };
  // A section by the words before its colon: "## Ordering keys", whatever its sizes.
  const named = (heading: string) => heading.split(': ')[0] as string;
  for (const section of run.sections) {
    const kept = page.sections.find((s) => named(s.heading) === named(section.heading));
    // The missed list is drawn again below, from the merged tables.
    if (section.heading === MISSED_HEADING) continue;
    if (TARGET_HEADINGS.has(section.heading) && kept !== undefined) {
      const removed = mergeRows(kept, section);
      if (section.heading === REFERENCE_HEADING) mergeWhy(kept, section, removed);
      continue;
    }
    if (TARGET_HEADINGS.has(section.heading)) {
      page.sections.splice(targetsAt(), 0, section);
      continue;
    }
    const marked = { heading: section.heading, lines: ['', provenance, ...section.lines] };
    if (kept === undefined) page.sections.splice(targetsAt(), 0, marked);
    else page.sections[page.sections.indexOf(kept)] = marked;
  }
  const missed = page.sections.find((s) => s.heading === MISSED_HEADING);
  const lines = ['', ...missedLines(page)];
  if (missed === undefined) page.sections.push({ heading: MISSED_HEADING, lines });
  else missed.lines = lines;
  return joinPage(page);
}
