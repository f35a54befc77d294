import type { DoctorProbe } from '../../driver.ts';
import type { Executor } from '../../executor.ts';

const TABLES = ['messages', 'effects'] as const;

/**
 * Planner statistics after a large load: `reltuples` is -1 until the table is first
 * analyzed (PostgreSQL 14+), and far below the real count after a bulk load that
 * autovacuum has not caught up with. Compared with an exact count; `fix` runs ANALYZE.
 */
export const statisticsProbe: DoctorProbe = {
  name: 'statistics',
  async run(x, { fix, statisticsMinRows }) {
    const findings = [];
    for (const table of TABLES) {
      const found = await stale(x, table, statisticsMinRows);
      if (found === null) continue;
      const what =
        found.estimate < 0
          ? `never analyzed although it holds ${found.actual} rows`
          : `estimated at ${found.estimate} rows but holds ${found.actual}`;
      let fixed = false;
      if (fix) {
        await x.query(`ANALYZE ${x.dialect.table(table)}`);
        fixed = (await stale(x, table, statisticsMinRows)) === null;
      }
      findings.push({
        check: 'statistics',
        // Slow plans, not wrong data: a deploy gate right after a bulk load must pass.
        severity: 'warning' as const,
        message: `table ${table} is ${what}: the planner may choose slow plans${fixed ? '; fixed by ANALYZE' : ' (onceq doctor --fix runs ANALYZE)'}`,
        ...(fix ? { fixed } : {}),
      });
    }
    return findings;
  },
};

async function stale(
  x: Executor,
  table: (typeof TABLES)[number],
  minRows: number,
): Promise<{ estimate: number; actual: number } | null> {
  const { rows } = await x.query<{ estimate: number; actual: number }>(
    `select (select c.reltuples from pg_class c where c.oid = to_regclass($1)) as estimate,
            (select count(*) from ${x.dialect.table(table)}) as actual`,
    [x.dialect.table(table)],
  );
  const estimate = Number(rows[0]?.estimate);
  const actual = Number(rows[0]?.actual);
  return actual >= minRows && (estimate < 0 || estimate < actual / 2) ? { estimate, actual } : null;
}
