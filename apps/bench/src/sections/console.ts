/** The web console's overview and a page of 50 messages on a store of 100,000 messages. */
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { consoleReport, runPgConsole, runSqliteConsole } from '../scenarios/console.ts';

export async function consoleSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('console')) return;
  const repeats = opts.quick ? 3 : 10;
  log('web console on 100,000 messages (SQLite) …');
  const runs = [await runSqliteConsole(join(scratch, 'console.db'), 100_000, repeats)];
  if (pgUrl !== null) {
    log('web console on 100,000 messages (PostgreSQL) …');
    runs.push(await runPgConsole(pgUrl, 100_000, repeats));
  }
  results.console = runs;
  for (const run of runs) {
    const report = consoleReport(run);
    out.push(...report.text);
    targets.push(...report.targets);
  }
}
