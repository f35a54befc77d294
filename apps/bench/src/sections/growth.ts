/** Growth: windows of new events on stores of 0 to 10,000,000 done events, and bytes per event. */
import type { SectionContext } from '../context.ts';
import { ID_KINDS } from '../ids.ts';
import { TARGETS } from '../options.ts';
import { section, table } from '../report.ts';
import { type GrowthWindow, runGrowth } from '../scenarios/growth.ts';
import { runStorage, type StorageFigure } from '../scenarios/storage.ts';
import { errorText, fmtMs, fmtRate } from '../util.ts';

const BACKEND = { sqlite: 'SQLite FULL', pg: 'PostgreSQL' } as const;

function bytes(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(n < 10 ? 1 : 0);
}

/** A per-event figure, '–' where it was not measured. */
function rateOrDash(n: number | null): string {
  return n === null ? '–' : fmtRate(n);
}

/** `of` against `base` as `1.23×`, '–' when either is unknown. */
function ratio(of: number | null, base: number | null): string {
  return of === null || base === null || !(base > 0) ? '–' : `${(of / base).toFixed(2)}×`;
}

export async function growthSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('growth')) return;
  const sizes = opts.growthSizes;
  log(`growth: windows of ${opts.growthWindow} events at ${sizes.join(', ')} stored events …`);
  let windows: GrowthWindow[] = [];
  let storage: StorageFigure[] = [];
  try {
    windows = await runGrowth({
      sizes,
      window: opts.growthWindow,
      ids: ID_KINDS,
      scratch,
      pgUrl,
      log,
    });
    log(`growth: bytes per live and pruned event (${opts.growthWindow} events) …`);
    storage = await runStorage({ events: opts.growthWindow, ids: ID_KINDS, scratch, pgUrl });
  } catch (error) {
    log(`growth failed: ${errorText(error)}`);
    targets.push({ target: 'growth section ran', measured: errorText(error), met: false });
  }
  results.growth = { windows, storage };

  out.push(
    section(
      `Growth: windows of ${opts.growthWindow.toLocaleString('en-US')} new events (enqueue in 1000-line batches, then work batch 100 by 1 or 2 worker processes) on stores already holding done events`,
    ),
  );
  out.push(
    table(
      [
        'backend',
        'ids',
        'stored before',
        'workers',
        'enqueue lines/s',
        'work msg/s',
        'p50 ms',
        'p99 ms',
        'worker CPU µs/msg',
        'server CPU µs/msg',
        'written B/event, enqueue',
        'written B/msg, work',
        'read B/event, enqueue',
        'read B/msg, work',
        'bytes/event',
        'checked',
      ],
      windows.map((w) => [
        BACKEND[w.backend],
        w.ids,
        w.storedBefore.toLocaleString('en-US'),
        String(w.workers),
        fmtRate(w.enqueueRate),
        fmtRate(w.rate),
        fmtMs(w.p50Ms),
        fmtMs(w.p99Ms),
        fmtRate(w.workerCpuUsPerMessage),
        rateOrDash(w.serverCpuUsPerMessage),
        rateOrDash(w.enqueueWrittenPerEvent),
        rateOrDash(w.workWrittenPerMessage),
        rateOrDash(w.enqueueReadPerEvent),
        rateOrDash(w.workReadPerMessage),
        fmtRate(w.bytesPerEvent),
        w.verified ? 'exact' : `NO: ${w.detail}`,
      ]),
    ),
  );
  out.push(
    '',
    "Written and read: SQLite, the bytes the processes handed to write calls (WAL frames, checkpoints) and got from read calls (pages missing from SQLite's own cache); PostgreSQL, the server's WAL (autovacuum's included) and what its processes read (pages missing from shared buffers). The prefill is inserted in id order (a bulk load: B-tree pages as full as they get); a store grown by random ids over months has emptier index pages, so its figures at the same size can only be lower.",
  );

  const largest = Math.max(...sizes);
  const ratios: string[][] = [];
  if (sizes.includes(0) && largest > 0) {
    for (const w of windows.filter((x) => x.size === largest)) {
      const base = windows.find(
        (x) =>
          x.size === 0 && x.backend === w.backend && x.ids === w.ids && x.workers === w.workers,
      );
      if (base === undefined) continue;
      const rate = w.rate / base.rate;
      const enq = w.enqueueRate / base.enqueueRate;
      const p99 = w.p99Ms / base.p99Ms;
      const enqWritten = ratio(w.enqueueWrittenPerEvent, base.enqueueWrittenPerEvent);
      const workWritten = ratio(w.workWrittenPerMessage, base.workWrittenPerMessage);
      const enqRead = ratio(w.enqueueReadPerEvent, base.enqueueReadPerEvent);
      const workRead = ratio(w.workReadPerMessage, base.workReadPerMessage);
      ratios.push([
        BACKEND[w.backend],
        w.ids,
        String(w.workers),
        `${enq.toFixed(2)}×`,
        `${rate.toFixed(2)}×`,
        `${p99.toFixed(2)}×`,
        enqWritten,
        workWritten,
        enqRead,
        workRead,
      ]);
      targets.push({
        target: `growth: ${BACKEND[w.backend]} ${w.ids} ${w.workers} worker(s) at ${largest.toLocaleString('en-US')} stored: enqueue and work ≥ ${TARGETS.growthRate}× the empty store's, p99 ≤ ${TARGETS.growthP99}×`,
        measured: `enqueue ${enq.toFixed(2)}×, work ${rate.toFixed(2)}×, p99 ${p99.toFixed(2)}×; per event written ${enqWritten} (enqueue), ${workWritten} (work), read ${enqRead}, ${workRead}`,
        met:
          w.verified &&
          enq >= TARGETS.growthRate &&
          rate >= TARGETS.growthRate &&
          p99 <= TARGETS.growthP99,
      });
    }
    out.push(
      '',
      `At ${largest.toLocaleString('en-US')} stored events against the empty store, same window:`,
      table(
        [
          'backend',
          'ids',
          'workers',
          'enqueue',
          'work',
          'p99',
          'written, enqueue',
          'written, work',
          'read, enqueue',
          'read, work',
        ],
        ratios,
      ),
    );
  }

  if (storage.length > 0) {
    out.push(
      section(
        `Storage per event: ${opts.growthWindow.toLocaleString('en-US')} events through enqueue and work, live (payload kept) and pruned (tombstone), by structure`,
      ),
    );
    const rows: string[][] = [];
    for (const f of storage) {
      const names = [
        ...new Set([...Object.keys(f.live), ...Object.keys(f.pruned)].filter((n) => n !== 'total')),
      ].sort();
      for (const name of [...names, 'total'])
        rows.push([BACKEND[f.backend], f.ids, name, bytes(f.live[name]), bytes(f.pruned[name])]);
    }
    out.push(table(['backend', 'ids', 'structure', 'live B/event', 'pruned B/event'], rows));
    out.push(
      '',
      'SQLite: dbstat pages after a checkpoint; PostgreSQL: relation sizes after VACUUM FULL (a compacted store; a running one also holds the dead row versions autovacuum has not reused yet). The payload here is about 70 bytes of JSON.',
    );
    for (const f of storage.filter((x) => x.backend === 'sqlite')) {
      const pruned = f.pruned.total ?? Number.NaN;
      targets.push({
        target: `a pruned event (its tombstone) costs ≤ 64 bytes (SQLite, ${f.ids})`,
        measured: `${bytes(pruned)} bytes`,
        met: pruned <= 64,
      });
    }
  }
}
