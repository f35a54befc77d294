/** Where a per-message cycle spends its time (SQLite NORMAL, one process). */

import type { SectionContext } from '../context.ts';
import { msCell, section, table } from '../report.ts';
import { type OverheadResult, runOverhead } from '../scenarios/overhead.ts';
import { type Spread, spread } from '../util.ts';

export async function overheadSection(ctx: SectionContext): Promise<void> {
  const { opts, sqlite, out, results, log } = ctx;
  if (opts.only.has('overhead')) {
    log('overhead breakdown …');
    const n = Math.min(opts.messages, opts.quick ? 500 : 3000);
    const rs: OverheadResult[] = [];
    for (let r = 0; r < opts.runs; r++) rs.push(await runOverhead(sqlite, n));
    const key = (k: keyof OverheadResult) => spread(rs.map((r) => r[k]));
    const rows: [string, Spread][] = [
      ['core per-message cycle (claim tx + apply tx), µs/msg', key('coreCycleUs')],
      ['bare per-message cycle, µs/msg', key('bareCycleUs')],
      [
        'Kysely build+compile of the 5 statements of a cycle (what a per-message compile costs), µs',
        key('kyselyCompileUs'),
      ],
      ['empty store.transact, µs', key('storeTxUs')],
      ['empty raw BEGIN IMMEDIATE;COMMIT, µs (×2 per message)', key('rawTxUs')],
      ['parseJson + v1 handler, µs/msg (core and bare alike)', key('handlerUs')],
    ];
    results.overhead = Object.fromEntries(rows.map(([k, v]) => [k, v]));
    out.push(
      section(
        `Per-message overhead breakdown: one process, SQLite NORMAL, ${n} messages, ${opts.runs} run(s)`,
      ),
    );
    out.push(
      table(
        ['what', 'µs median (min–max)'],
        rows.map(([k, v]) => [k, msCell(v)]),
      ),
    );
  }
}
