/** status() and a claim on 100,000 messages, with their query plans. */
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { msCell, section, table } from '../report.ts';
import { runPgStatus, runSqliteStatus, type StatusResult } from '../scenarios/status.ts';
import { errorText, fmtRate } from '../util.ts';

export async function statusSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (opts.only.has('status')) {
    const repeats = opts.quick ? 5 : 20;
    const found: StatusResult[] = [];
    log('status on 100,000 messages (SQLite) …');
    found.push(await runSqliteStatus(join(scratch, 'status.db'), 100_000, repeats));
    if (pgUrl !== null) {
      log('status on 100,000 messages (PostgreSQL) …');
      try {
        found.push(await runPgStatus(pgUrl, 100_000, repeats));
      } catch (error) {
        log(`PostgreSQL status skipped: ${errorText(error)}`);
      }
    }
    results.status = found;
    for (const st of found) {
      out.push(
        section(
          `status() and claim on ${fmtRate(st.messages)} messages (${st.backend}, synthetic ids, see scenarios/status.ts)`,
        ),
      );
      out.push(
        table(
          ['operation', 'ms median (min–max)'],
          [
            ['status()', msCell(st.statusMs)],
            ['claimMany(limit 1) incl. recovery', msCell(st.claimMs)],
          ],
        ),
      );
      for (const p of st.plans)
        out.push(
          `\n${st.backend === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} — ${p.query}\n  ${p.sql}\n${p.plan.map((l) => `    ${l}`).join('\n')}`,
        );
      targets.push({
        target: `status on 100,000 messages < ${TARGETS.statusMs} ms (${st.backend})`,
        measured: `${msCell(st.statusMs)} ms`,
        met: st.statusMs.median < TARGETS.statusMs,
      });
    }
  }
}
