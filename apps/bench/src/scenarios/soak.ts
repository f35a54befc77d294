/**
 * The soak: a real `onceq worker` process under a steady producer for a long time,
 * with the store kept in steady state, sampled at every interval.
 *
 * - The producer (this process) enqueues `rate` events a second through the public
 *   `enqueue`, a batch every 100 ms, UUIDv7 ids.
 * - The worker (`onceq worker --batch 100 --prune-every <interval>
 *   --done-older-than <interval>`) applies each event as one row of the application's
 *   own table `soak_applied` (apps/bench/src/soak-handler.ts) and prunes payloads in the
 *   background.
 * - Every interval this process forgets the tombstones older than three intervals
 *   (`prune --forget-older-than`, forced below the 3-day floor: the soak compresses
 *   months into minutes) and, on PostgreSQL, runs `VACUUM` on onceq's tables, as
 *   docs/operations.md advises after a prune. On its own schedule it samples: events applied a second,
 *   the p99 of produced-to-applied latency, the worker's RSS, the SQLite WAL file, the
 *   store's size (SQLite pages but those of `soak_applied`, which grows by design;
 *   PostgreSQL onceq's tables, indexes and TOAST) and the events stored.
 *
 * At the end the producer stops, the worker finishes the backlog and is stopped with
 * SIGTERM by its pid; every produced event must have exactly one row in `soak_applied`.
 * A series is flat when, after the warm-up (by default the first half of the samples, at
 * least five), its least-squares line moves by at most a tenth of its mean over the samples.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, openStore, type Store, status } from '@onceq/core';
import { prune, storageUse } from '@onceq/core/admin';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { idSource } from '../ids.ts';
import { percentile } from '../util.ts';

const BIN = join(import.meta.dir, '../../../cli/src/bin.ts');
const HANDLER = join(import.meta.dir, '../soak-handler.ts');

export interface SoakSample {
  /** Seconds since the producer started. */
  atSeconds: number;
  /** Events applied a second over the interval. */
  applied: number;
  /** Produced-to-applied latency of the interval's events, p99, ms. */
  p99Ms: number;
  rssBytes: number;
  /** SQLite only: the `-wal` file. */
  walBytes: number | null;
  storeBytes: number;
  /** Messages stored (tombstones included), after the interval's forgetting. */
  events: number;
}

/** The series judged for flatness, by their names in {@link SoakSample}. */
export const SOAK_SERIES = ['applied', 'p99Ms', 'rssBytes', 'walBytes', 'storeBytes'] as const;
export type SoakSeries = (typeof SOAK_SERIES)[number];

export interface SoakResult {
  samples: SoakSample[];
  /** Samples before this index are the warm-up. */
  warmUp: number;
  produced: number;
  /** Rows in `soak_applied`, and distinct event ids among them. */
  appliedRows: number;
  appliedDistinct: number;
  exact: boolean;
  /** Per series: its move over the sampled span after the warm-up, as a share of its mean. */
  drift: Partial<Record<SoakSeries, number>>;
  /** The worker's exit code after SIGTERM. */
  workerExit: number;
  workerLogTail: string;
}

export interface SoakOptions {
  /** A SQLite file, or a PostgreSQL URL whose database is the soak's alone (default schema). */
  db: string;
  durationMs: number;
  intervalMs: number;
  /** Events produced a second. */
  rate: number;
  /** The samples taken in this first part are the warm-up; by default the first half. */
  warmUpMs?: number;
  log?: (line: string) => void;
}

/** The last `max` characters a stream wrote, read as it arrives so the writer never blocks. */
function tail(stream: ReadableStream<Uint8Array>, max = 20_000): () => string {
  let text = '';
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      if (text.length > 2 * max) text = text.slice(-max);
    }
  })();
  return () => text.slice(-max);
}

function rssBytes(pid: number): number {
  try {
    const line = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line === null ? Number.NaN : Number(line[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Least-squares move of `ys` over its span, as a share of its mean (0 for a flat or empty series). */
export function relativeDrift(ys: readonly number[]): number {
  const n = ys.length;
  if (n < 2) return 0;
  const meanX = (n - 1) / 2;
  const meanY = ys.reduce((a, b) => a + b, 0) / n;
  if (meanY === 0) return 0;
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  });
  return ((num / den) * (n - 1)) / meanY;
}

async function createAppliedTable(store: Store): Promise<void> {
  const text =
    store.kind === 'sqlite'
      ? 'CREATE TABLE soak_applied (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, produced_ms INTEGER NOT NULL, applied_ms INTEGER NOT NULL)'
      : 'CREATE TABLE soak_applied (id bigserial PRIMARY KEY, event_id text NOT NULL, produced_ms bigint NOT NULL, applied_ms bigint NOT NULL)';
  await store.transact((x) => x.query(text));
}

async function appliedSince(
  store: Store,
  afterId: number,
): Promise<{ lastId: number; latencies: number[] }> {
  const p = store.kind === 'sqlite' ? '?1' : '$1';
  const { rows } = await store.read((x) =>
    x.query<{ id: number | string; latency: number | string }>(
      `SELECT id, applied_ms - produced_ms AS latency FROM soak_applied WHERE id > ${p} ORDER BY id`,
      [afterId],
    ),
  );
  return {
    lastId: rows.length === 0 ? afterId : Number(rows[rows.length - 1]?.id),
    latencies: rows.map((r) => Number(r.latency)),
  };
}

/**
 * SQLite: the pages of `soak_applied`, which lives in the store's file (its rows are
 * inserted with the ACK) and grows by design; PostgreSQL's store size counts onceq's
 * tables only.
 */
async function appliedTableBytes(store: Store): Promise<number> {
  if (store.kind !== 'sqlite') return 0;
  const { rows } = await store.read((x) =>
    x.query<{ bytes: number | null }>(
      "SELECT SUM(pgsize) AS bytes FROM dbstat WHERE name IN ('soak_applied')",
    ),
  );
  return Number(rows[0]?.bytes ?? 0);
}

/** Runs the soak on `opts.db` and returns its samples and checks; the store is left for the caller. */
export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log ?? (() => {});
  const intervalSeconds = Math.max(1, Math.round(opts.intervalMs / 1000));
  const store = await openStore(opts.db, { idPolicy: GENERAL_POLICY });
  await createAppliedTable(store);
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  const worker = Bun.spawn(
    [
      'bun',
      BIN,
      'worker',
      '--db',
      opts.db,
      '--handler',
      HANDLER,
      '--batch',
      '100',
      '--prune-every',
      `${intervalSeconds}s`,
      '--done-older-than',
      `${intervalSeconds}s`,
    ],
    { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env },
  );
  const workerLog = tail(worker.stderr);
  tail(worker.stdout);
  const samples: SoakSample[] = [];
  let produced = 0;
  let producing = true;
  const next = idSource('uuid7');
  const started = performance.now();
  const producer = (async () => {
    const encoder = new TextEncoder();
    while (producing) {
      const due = Math.floor((opts.rate * (performance.now() - started)) / 1000) - produced;
      for (let left = due; left > 0; left -= 1000) {
        const lines: string[] = [];
        for (let i = 0; i < Math.min(1000, left); i++) {
          const n = produced + lines.length;
          lines.push(
            `{"event_id":"${next()}","payload":{"amount_cents":${1 + (n % 9999)},"category":"book","produced_ms":${Date.now()}}}`,
          );
        }
        produced += (await enqueue(store, encoder.encode(`${lines.join('\n')}\n`))).accepted;
      }
      await Bun.sleep(100);
    }
  })();
  // Maintenance on its own schedule, so a slow (paced) prune never delays a sample.
  const maintenance = (async () => {
    while (producing) {
      await Bun.sleep(opts.intervalMs);
      if (!producing) break;
      await prune(store, { forgetOlderThanSeconds: 3 * intervalSeconds, force: true });
      if (store.kind === 'postgres') {
        for (const table of ['messages', 'effects', 'completions', 'onceq_counts'])
          await store.read((x) => x.query(`VACUUM ${table}`));
      }
    }
  })();
  let lastId = 0;
  let lastAt = performance.now();
  let workerExit = Number.NaN;
  try {
    for (let k = 1; k * opts.intervalMs <= opts.durationMs; k++) {
      await Bun.sleep(Math.max(0, started + k * opts.intervalMs - performance.now()));
      if (worker.exitCode !== null) throw new Error(`the worker exited with ${worker.exitCode}`);
      const since = await appliedSince(store, lastId);
      const now = performance.now();
      const { messages } = await status(store);
      const events = Object.values(messages).reduce((a, b) => a + (b ?? 0), 0);
      const sample: SoakSample = {
        atSeconds: Math.round((now - started) / 1000),
        applied: (since.latencies.length / (now - lastAt)) * 1000,
        p99Ms: percentile(since.latencies, 99),
        rssBytes: rssBytes(worker.pid),
        walBytes: store.kind === 'sqlite' ? fileBytes(`${opts.db}-wal`) : null,
        storeBytes: (await storageUse(store)).bytes - (await appliedTableBytes(store)),
        events,
      };
      lastId = since.lastId;
      lastAt = now;
      samples.push(sample);
      log(
        `  soak ${store.kind} ${sample.atSeconds} s: ${Math.round(sample.applied)}/s applied, p99 ${Math.round(sample.p99Ms)} ms, RSS ${Math.round(sample.rssBytes / 1e6)} MB, store ${Math.round(sample.storeBytes / 1e6)} MB (${events} events)${sample.walBytes === null ? '' : `, WAL ${Math.round(sample.walBytes / 1e6)} MB`}`,
      );
    }
  } finally {
    producing = false;
    await producer;
    await maintenance;
    // The backlog, bounded: every produced event applied, or give up after a minute.
    const deadline = performance.now() + 60_000;
    for (;;) {
      const rows = await store.read((x) =>
        x.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM soak_applied'),
      );
      if (Number(rows.rows[0]?.n) >= produced || performance.now() > deadline) break;
      await Bun.sleep(50);
    }
    worker.kill('SIGTERM');
    const timer = setTimeout(() => worker.kill('SIGKILL'), 30_000);
    workerExit = await worker.exited;
    clearTimeout(timer);
  }
  const counted = await store.read((x) =>
    x.query<{ n: number | string; d: number | string }>(
      'SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM soak_applied',
    ),
  );
  await store.close();
  const appliedRows = Number(counted.rows[0]?.n);
  const appliedDistinct = Number(counted.rows[0]?.d);
  // The store fills its window after the payload prune's age plus the dedup window, and
  // PostgreSQL's free space settles a few vacuums later: the first half is the warm-up,
  // unless the caller chose its length.
  const warmUp =
    opts.warmUpMs === undefined
      ? Math.max(Math.min(samples.length, 5), Math.floor(samples.length / 2))
      : Math.min(samples.length, Math.floor(opts.warmUpMs / opts.intervalMs));
  const steady = samples.slice(warmUp);
  const drift: Partial<Record<SoakSeries, number>> = {};
  for (const series of SOAK_SERIES) {
    const ys = steady.map((s) => s[series]);
    if (ys.some((y) => y === null || !Number.isFinite(y))) continue;
    drift[series] = relativeDrift(ys as number[]);
  }
  return {
    samples,
    warmUp,
    produced,
    appliedRows,
    appliedDistinct,
    exact: produced > 0 && appliedRows === produced && appliedDistinct === produced,
    drift,
    workerExit,
    workerLogTail: workerLog(),
  };
}
