/** Start-up: `onceq status` on a small SQLite store, one fresh process per run, next to sqlite3. */
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { msCell, section, table } from '../report.ts';
import { runStartup } from '../scenarios/startup.ts';
import { fmtMs } from '../util.ts';

const ROOT = join(import.meta.dir, '..', '..', '..', '..');

export async function startupSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, out, targets, results, log } = ctx;
  if (!opts.only.has('startup')) return;
  log('start-up of onceq status on a small store (builds the binary) …');
  const st = await runStartup(ROOT, scratch, opts.quick ? 5 : 20);
  results.startup = st.rows;
  out.push(
    section('Start-up: one fresh process per run, small SQLite store (scenarios/startup.ts)'),
  );
  out.push(
    table(
      ['command', 'wall ms median (min–max)', 'CPU ms median (min–max)'],
      st.rows.map((r) => [r.what, msCell(r.ms.wall), msCell(r.ms.cpu)]),
    ),
  );
  // Next to its references: sqlite3 answering the same question, and what any compiled
  // bun program pays to start (on a loaded machine both move with it).
  const next = [
    st.sqliteMs === null ? 'sqlite3 not installed' : `sqlite3 ${fmtMs(st.sqliteMs.wall.median)} ms`,
    `bun floor ${fmtMs(st.floorMs.wall.median)} ms`,
  ].join(', ');
  targets.push({
    target: `onceq status on a small SQLite store ≤ ${TARGETS.startupMs} ms (compiled binary)`,
    measured: `${msCell(st.binaryStatusMs.wall)} ms (CPU ${msCell(st.binaryStatusMs.cpu)} ms); ${next}`,
    met: st.binaryStatusMs.wall.median <= TARGETS.startupMs,
  });
}
