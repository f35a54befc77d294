/** The long-running worker: throughput vs `work --batch`, concurrency, wake-up, idle CPU. */
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { section, table } from '../report.ts';
import { pgOpener, runService, type ServiceResult, sqliteOpener } from '../scenarios/service.ts';
import { fmtMs, fmtRate } from '../util.ts';

export async function serviceSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('service')) return;
  const found: ServiceResult[] = [];
  const n = Math.min(opts.messages, opts.quick ? 1000 : 5000);
  log('service: worker vs work --batch, concurrency, wake-up, idle CPU …');
  found.push(
    await runService('sqlite', sqliteOpener(scratch), {
      messages: n,
      batch: 100,
      log,
      db: join(scratch, 'idle.db'),
    }),
  );
  if (pgUrl !== null)
    found.push(await runService('pg', pgOpener(pgUrl), { messages: n, batch: 100, log, db: null }));
  results.service = found;
  out.push(section(`The long-running worker (${n} messages, batch 100; see scenarios/service.ts)`));
  out.push(
    table(
      [
        'backend',
        'work msg/s',
        'worker msg/s',
        'c1 (10 ms) msg/s',
        'c8 (10 ms) msg/s',
        'wake p50 / p90 ms',
        'idle CPU %',
      ],
      found.map((r) => [
        r.backend,
        fmtRate(r.workRate),
        fmtRate(r.workerRate),
        fmtRate(r.concurrency1Rate),
        fmtRate(r.concurrency8Rate),
        `${fmtMs(r.wakeP50Ms)} / ${fmtMs(r.wakeP90Ms)}`,
        r.idleCpuPercent.toFixed(2),
      ]),
    ),
  );
  for (const r of found) {
    targets.push(
      {
        target: `worker throughput within 10 % of work --batch 100 (${r.backend})`,
        measured: `${fmtRate(r.workerRate)} vs ${fmtRate(r.workRate)} msg/s = ${(r.workerRate / r.workRate).toFixed(2)}×`,
        met: r.workerRate >= 0.9 * r.workRate,
      },
      {
        target: `--concurrency 8 ≥ 5× --concurrency 1 with a 10 ms handler (${r.backend})`,
        measured: `${(r.concurrency8Rate / r.concurrency1Rate).toFixed(1)}×`,
        met: r.concurrency8Rate >= 5 * r.concurrency1Rate,
      },
      {
        target:
          r.backend === 'pg'
            ? 'wake-up enqueue→claim p50 < 50 ms (PostgreSQL, NOTIFY)'
            : 'wake-up enqueue→claim p50 < the 1000 ms poll interval (SQLite)',
        measured: `${fmtMs(r.wakeP50Ms)} ms (${r.wakeSamples} samples)`,
        met: r.wakeP50Ms < (r.backend === 'pg' ? 50 : 1000),
      },
      {
        target: `idle worker CPU < 1 % of a core (${r.backend})`,
        measured: Number.isNaN(r.idleCpuPercent)
          ? 'not measured (the CLI worker would use the default schema of that database)'
          : `${r.idleCpuPercent.toFixed(2)} % (a real onceq worker process, 10 s)`,
        met: Number.isNaN(r.idleCpuPercent) ? null : r.idleCpuPercent < 1,
      },
    );
  }
}
