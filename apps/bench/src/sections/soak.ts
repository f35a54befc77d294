/** The soak: a worker under a steady producer for minutes, sampled, charted, checked flat and exact. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { section, table } from '../report.ts';
import { runSoak, SOAK_SERIES, type SoakResult, type SoakSeries } from '../scenarios/soak.ts';
import { lineChart } from '../svg.ts';
import { errorText, fmtRate } from '../util.ts';

const ROOT = join(import.meta.dir, '..', '..', '..', '..');

/** Events produced a second: a busy source, well inside what one worker keeps up with. */
const SOAK_RATE = 500;

const SERIES_LABEL: Record<SoakSeries, string> = {
  applied: 'events applied / s',
  p99Ms: 'p99 produced → applied, ms',
  rssBytes: 'worker RSS, MB',
  walBytes: 'SQLite WAL file, MB',
  storeBytes: 'store size, MB',
};

const MB = (n: number | null) => (n === null ? null : n / 1e6);

/** A database of its own on the server at `url`, for the worker's default schema; and its drop. */
async function ownDatabase(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `onceq_bench_soak_${process.pid}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  return { url: own.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

function chart(backend: string, r: SoakResult, intervalSeconds: number): string {
  const xs = r.samples.map((s) => s.atSeconds / 60);
  return lineChart(
    `onceq soak, ${backend}: ${SOAK_RATE} events/s, prune every ${intervalSeconds} s (grey: warm-up)`,
    'minutes',
    xs,
    SOAK_SERIES.filter((k) => k !== 'walBytes' || backend === 'SQLite').map((k) => ({
      label: SERIES_LABEL[k],
      values: r.samples.map((s) =>
        k === 'rssBytes' || k === 'walBytes' || k === 'storeBytes' ? MB(s[k]) : s[k],
      ),
    })),
    r.samples[r.warmUp - 1]?.atSeconds === undefined
      ? undefined
      : (r.samples[r.warmUp - 1]?.atSeconds as number) / 60,
  );
}

export async function soakSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('soak')) return;
  const minutes = opts.soakMinutes;
  const intervalMs = minutes >= 10 ? 60_000 : 10_000;
  const runs: { backend: string; file: string; result: SoakResult }[] = [];
  for (const backend of ['SQLite', 'PostgreSQL'] as const) {
    if (backend === 'PostgreSQL' && pgUrl === null) continue;
    log(`soak: ${backend}, ${minutes} min at ${SOAK_RATE} events/s …`);
    const dir = mkdtempSync(join(scratch, 'soak-'));
    let db: { url: string; drop: () => Promise<void> } | null = null;
    try {
      db =
        backend === 'SQLite'
          ? { url: join(dir, 'soak.db'), drop: async () => {} }
          : await ownDatabase(pgUrl as string);
      const result = await runSoak({
        db: db.url,
        durationMs: minutes * 60_000,
        intervalMs,
        rate: SOAK_RATE,
        log,
      });
      runs.push({
        backend,
        file: `soak-${backend === 'SQLite' ? 'sqlite' : 'postgres'}.svg`,
        result,
      });
    } catch (error) {
      log(`soak on ${backend} failed: ${errorText(error)}`);
      targets.push({ target: `soak on ${backend} ran`, measured: errorText(error), met: false });
    } finally {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  results.soak = runs.map((r) => ({ backend: r.backend, ...r.result }));
  if (runs.length === 0) return;

  out.push(
    section(
      `Soak: one onceq worker, ${SOAK_RATE} events/s for ${minutes} min per backend, payloads pruned every ${intervalMs / 1000} s, tombstones forgotten after ${(3 * intervalMs) / 1000} s`,
    ),
  );
  const chartDir = opts.writeDocs ? join(ROOT, 'docs') : join(ROOT, 'bench-results');
  mkdirSync(chartDir, { recursive: true });
  for (const { backend, file, result: r } of runs) {
    writeFileSync(join(chartDir, file), chart(backend, r, intervalMs / 1000));
    out.push(
      `${backend}:`,
      table(
        ['min', 'applied/s', 'p99 ms', 'RSS MB', 'WAL MB', 'store MB', 'events'],
        r.samples.map((s, i) => [
          `${(s.atSeconds / 60).toFixed(1)}${i < r.warmUp ? ' (warm-up)' : ''}`,
          fmtRate(s.applied),
          fmtRate(s.p99Ms),
          (s.rssBytes / 1e6).toFixed(1),
          s.walBytes === null ? '–' : (s.walBytes / 1e6).toFixed(1),
          (s.storeBytes / 1e6).toFixed(1),
          s.events.toLocaleString('en-US'),
        ]),
      ),
      `drift after the warm-up (least-squares move over the span / mean): ${Object.entries(r.drift)
        .map(([k, v]) => `${k} ${((v as number) * 100).toFixed(1)} %`)
        .join(
          ', ',
        )}; ${r.produced} produced, ${r.appliedRows} applied (${r.appliedDistinct} distinct)`,
      opts.writeDocs ? `![soak on ${backend}](${file})` : `chart: ${join(chartDir, file)}`,
      '',
    );
    const drifts = Object.entries(r.drift) as [SoakSeries, number][];
    const worst = drifts.reduce((a, b) => (Math.abs(b[1]) > Math.abs(a[1]) ? b : a), [
      'applied',
      0,
    ] as [SoakSeries, number]);
    targets.push({
      target: `soak on ${backend}: every sampled figure flat after the warm-up (within ±${TARGETS.soakDrift * 100} %) and every event applied exactly once`,
      measured: `${r.samples.length - r.warmUp} steady samples, largest drift ${worst[0]} ${(worst[1] * 100).toFixed(1)} %; ${r.exact ? 'exact' : `NOT exact: ${r.produced} produced, ${r.appliedRows} rows, ${r.appliedDistinct} distinct`}`,
      // Fewer than five steady samples cannot show a trend: not judged.
      met:
        r.samples.length - r.warmUp < 5
          ? null
          : r.exact && drifts.every(([, v]) => Math.abs(v) <= TARGETS.soakDrift),
    });
  }
}
