/** Enqueue throughput: 1000-line batches, validation included, SQLite FULL/NORMAL and PostgreSQL. */
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { msCell, rateCell, section, table } from '../report.ts';
import { type EnqueueRun, runEnqueue } from '../scenarios/enqueue.ts';
import { pgFactory } from '../scenarios/processing.ts';
import { fmtRate, spread } from '../util.ts';

export async function enqueueSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, sqlite, pgUrl, out, targets, results, log } = ctx;
  if (opts.only.has('enqueue')) {
    log('enqueue …');
    const kinds: { name: string; run: () => Promise<EnqueueRun> }[] = [];
    for (const synchronous of ['FULL', 'NORMAL'] as const) {
      kinds.push({
        name: `sqlite ${synchronous}`,
        run: async () => {
          const path = join(scratch, `enqueue-${synchronous}.db`);
          const r = await runEnqueue({ kind: 'sqlite', path, synchronous }, opts.messages);
          await sqlite.dispose(path);
          return r;
        },
      });
    }
    if (pgUrl !== null) {
      const factory = pgFactory(pgUrl);
      kinds.push({ name: 'pg', run: () => runEnqueue({ kind: 'pg', factory }, opts.messages) });
    }
    await kinds[0]?.run(); // warm-up (JIT, page cache), not counted
    const runs = new Map<string, EnqueueRun[]>(kinds.map((k) => [k.name, []]));
    for (let r = 0; r < (opts.quick ? opts.runs : Math.max(3, opts.runs)); r++)
      for (const kind of kinds) runs.get(kind.name)?.push(await kind.run());
    const rows = kinds.map((k) => {
      const rs = runs.get(k.name) ?? [];
      return {
        store: k.name,
        rate: spread(rs.map((r) => r.rate)),
        batchMs: spread(rs.map((r) => r.batchMs)),
        parseRate: spread(rs.map((r) => r.parseRate)),
        bareRate: spread(rs.map((r) => r.bareRate).filter(Number.isFinite)),
        bareNoTriggerRate: spread(rs.map((r) => r.bareNoTriggerRate).filter(Number.isFinite)),
        floorRate: spread(
          rs.map((r) => 1 / (1 / r.parseRate + 1 / r.bareRate)).filter(Number.isFinite),
        ),
        cpuMsPer1000: spread(rs.map((r) => r.cpuMsPer1000)),
        floorCpuMsPer1000: spread(rs.map((r) => r.floorCpuMsPer1000).filter(Number.isFinite)),
        runs: rs,
      };
    });
    results.enqueue = rows;
    out.push(
      section(
        `Enqueue: ${opts.messages} lines in 1000-line batches (bytes in, validation included), fresh store`,
      ),
    );
    out.push(
      table(
        [
          'store',
          'lines/s median (min–max)',
          'ms per 1000-line batch',
          'parseBatch alone, lines/s',
          'bare insert, lines/s',
          'bare, no counter trigger',
          'floor: parse + bare insert',
          'CPU ms/1000 lines',
          'floor CPU ms/1000 lines',
        ],
        rows.map((r) => [
          r.store,
          rateCell(r.rate),
          msCell(r.batchMs),
          rateCell(r.parseRate),
          rateCell(r.bareRate),
          rateCell(r.bareNoTriggerRate),
          rateCell(r.floorRate),
          msCell(r.cpuMsPer1000),
          msCell(r.floorCpuMsPer1000),
        ]),
      ),
    );
    out.push(
      'bare insert: the same parsed rows into a fresh store of the same schema (indexes, CHECKs, counter trigger) with plain bun:sqlite at the same synchronous, 500-row INSERTs, one BEGIN IMMEDIATE … COMMIT (one WAL fsync at FULL) per batch, no duplicate check. floor: parse and that insert one after the other, per run (SQLite only). CPU: user + system of this process over the enqueue batches, and over parse + the bare insert (the fsync wait is not CPU, so these barely move under load).',
    );
    const full = rows.find((r) => r.store === 'sqlite FULL');
    if (full)
      targets.push({
        target: `enqueue 1000-line batch ≥ ${fmtRate(TARGETS.enqueue)} lines/s (SQLite FULL)`,
        measured: `${rateCell(full.rate)} lines/s`,
        met: full.rate.median >= TARGETS.enqueue,
      });
  }
}
