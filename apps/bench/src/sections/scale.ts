/** PostgreSQL at scale: 1 … 64 worker processes, directly and through PgBouncer. */
import type { SectionContext } from '../context.ts';
import { section, table } from '../report.ts';
import {
  runScale,
  SCALE_MESSAGES,
  SCALE_WARM_UP,
  SCALE_WARM_UP_TOTAL,
  startPooler,
} from '../scenarios/scale-pg.ts';
import { errorText, fmtMs, fmtRate } from '../util.ts';

export const SCALE_WORKERS = [1, 4, 8, 16, 32, 64] as const;

export async function scaleSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('scale') || pgUrl === null) return;
  // --quick: a smoke test of the section, too short to judge its target.
  const messages = opts.quick ? 1000 : SCALE_MESSAGES;
  const warmUp = opts.quick ? 150 : SCALE_WARM_UP;
  const warmUpOf = (workers: number) =>
    opts.quick ? warmUp : Math.min(warmUp, Math.floor(SCALE_WARM_UP_TOTAL / workers / 50) * 50);
  const pooler = startPooler(pgUrl, scratch);
  if ('skip' in pooler) log(`scale: PgBouncer skipped: ${pooler.skip}`);
  try {
    const rows = await runScale(
      pgUrl,
      'url' in pooler ? pooler : null,
      opts.scaleWorkers ?? SCALE_WORKERS,
      messages,
      warmUpOf,
      log,
    );
    results.scale = rows;
    out.push(
      section(
        `PostgreSQL at scale: ${messages} messages drained with batch 50 by N worker processes, each warmed by ${opts.quick ? warmUp : `${warmUp} (${SCALE_WARM_UP_TOTAL} in all at most)`} of its own; msg/s from releasing the ready workers to the last one's end; CPU in that window, ms per 1000 messages, of the worker processes and of the server's processes (PgBouncer's included through it; – when the server is not on this machine); spreads: first to last worker's start, first to last worker's end (scenarios/scale-pg.ts)`,
      ),
    );
    out.push(
      table(
        [
          'mode',
          'workers',
          'msg/s',
          'worker CPU',
          'server CPU',
          'done per worker',
          'start spread ms',
          'end spread ms',
          'peak server connections',
          'exact',
          'errors',
        ],
        rows.map((r) => [
          r.poolMax === null ? r.mode : `${r.mode}, pool_max=${r.poolMax}`,
          String(r.workers),
          fmtRate(r.rate),
          fmtMs(r.workerCpuMsPer1000),
          r.serverCpuMsPer1000 === null ? '–' : fmtMs(r.serverCpuMsPer1000),
          r.doneRange[0] === r.doneRange[1]
            ? String(r.doneRange[0])
            : `${r.doneRange[0]}–${r.doneRange[1]}`,
          fmtMs(r.startSpreadMs),
          fmtMs(r.endSpreadMs),
          String(r.peakConnections),
          r.exact ? 'yes' : 'NO',
          r.errors.length === 0 ? '-' : `${r.errors.length}: ${r.errors[0]?.slice(0, 80)}`,
        ]),
      ),
    );
    for (const mode of new Set(rows.map((r) => r.mode))) {
      const at = (n: number) => rows.find((r) => r.mode === mode && r.workers === n);
      const at8 = at(8);
      const at32 = at(32);
      if (at8 !== undefined && at32 !== undefined) {
        targets.push({
          target: `PostgreSQL ${mode}: throughput at 32 workers not below that at 8`,
          measured: `${fmtRate(at32.rate)} vs ${fmtRate(at8.rate)} msg/s`,
          met: at32.rate >= at8.rate,
        });
      }
      targets.push({
        target: `PostgreSQL ${mode}: every run exact, no refused connection`,
        measured: rows
          .filter((r) => r.mode === mode)
          .map((r) => `${r.workers}: ${r.exact ? 'exact' : 'NOT exact'}, ${r.errors.length} errors`)
          .join('; '),
        met: rows.filter((r) => r.mode === mode).every((r) => r.exact && r.errors.length === 0),
      });
    }
  } catch (error) {
    log(`scale skipped: ${errorText(error)}`);
  } finally {
    if ('stop' in pooler) pooler.stop();
  }
}
