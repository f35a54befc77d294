/**
 * The throughput and latency targets in one table, each next to its reference from the
 * same run: onceq's figure, the reference's, the ratio, met or missed, and for a miss
 * one line of why and what would close it (the profile behind each line: docs/benchmarks.md).
 * Reads what the other sections left in `results`; a target whose section
 * did not run says so instead of guessing.
 */
import { graphileKey } from '../anchors/index.ts';
import type { SectionContext } from '../context.ts';
import { section, table } from '../report.ts';
import { fmtMs, fmtRate, type Spread } from '../util.ts';

/** The target thresholds: each a ratio to its reference, a rate or a latency. */
export const REFERENCE_TARGETS = {
  sqliteBatchVsBare: 0.9,
  twoWorkersVsOne: 1.0,
  minShare: 0.3,
  enqueueLinesPerSecond: 200_000,
  pgBatchVsGraphile: 1.5,
  pgPerMessageVsGraphile: 1.5,
  /** onceq's server CPU per message over graphile-worker's, at most. */
  pgServerCpuVsGraphile: 1.0,
  statusMs: 100,
  claimMs: 5,
} as const;

export interface ReferenceTargetRow {
  target: string;
  onceq: string;
  reference: string;
  ratio: string;
  met: boolean | null;
  /** For a miss (or a target not measured): why, and what would close it. */
  why: string;
}

interface ProcessingLike {
  config: {
    backend: string;
    impl: string;
    /** `own-row` rows (a handler's own completion) are compared with the money effect only. */
    effect?: string;
    synchronous: string;
    workers: number;
    batch: number;
  };
  rate: Spread;
  minShare: number;
  errors: string[];
  busyRetries: number;
  cpuMsPer1000?: Spread;
}
interface AnchorLike {
  key: string;
  rate: Spread;
  /** The server's CPU µs per message (PostgreSQL on this machine). */
  serverCpuUs?: Spread | null;
  /** Bytes of WAL per message (PostgreSQL). */
  walBytes?: Spread | null;
}
interface StatusLike {
  backend: string;
  messages: number;
  statusMs: Spread;
  claimMs: Spread;
}
interface EnqueueLike {
  store: string;
  rate: Spread;
  parseRate: Spread;
  /** The bare bun:sqlite insert of the parsed rows and parse + that insert (SQLite). */
  bareRate?: Spread;
  bareNoTriggerRate?: Spread;
  floorRate?: Spread;
  cpuMsPer1000?: Spread;
  floorCpuMsPer1000?: Spread;
}

const NOT_RUN = (what: string): Omit<ReferenceTargetRow, 'target'> => ({
  onceq: '–',
  reference: '–',
  ratio: '–',
  met: null,
  why: `not measured: ${what}`,
});

function ratioRow(
  target: string,
  onceq: number,
  reference: number,
  unit: string,
  threshold: number,
  why: string,
  extra = '',
): ReferenceTargetRow {
  const ratio = onceq / reference;
  const met = Number.isFinite(ratio) ? ratio >= threshold : null;
  return {
    target,
    onceq: `${fmtRate(onceq)} ${unit}${extra}`,
    reference: `${fmtRate(reference)} ${unit}`,
    ratio: Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '–',
    met,
    why: met === true ? '' : why,
  };
}

function cpu(row: ProcessingLike | undefined): string {
  const ms = row?.cpuMsPer1000?.median;
  return ms === undefined || !Number.isFinite(ms) ? '?' : fmtMs(ms);
}

function sqliteRows(processing: readonly ProcessingLike[]): ReferenceTargetRow[] {
  const find = (impl: string, sync: string, workers: number) =>
    processing.find(
      (r) =>
        (r.config.effect ?? 'money') === 'money' &&
        r.config.backend === 'sqlite' &&
        r.config.impl === impl &&
        r.config.synchronous === sync &&
        r.config.workers === workers &&
        r.config.batch === 100,
    );
  const out: ReferenceTargetRow[] = [];
  for (const sync of ['FULL', 'NORMAL']) {
    const target = `SQLite batch 100, ${sync}, 1 worker: onceq ≥ ${REFERENCE_TARGETS.sqliteBatchVsBare}× bare protocol`;
    const core = find('core', sync, 1);
    const bare = find('bare', sync, 1);
    if (core === undefined || bare === undefined) {
      out.push({ target, ...NOT_RUN('the sqlite section (batch 100) did not run') });
      continue;
    }
    out.push(
      ratioRow(
        target,
        core.rate.median,
        bare.rate.median,
        'msg/s',
        REFERENCE_TARGETS.sqliteBatchVsBare,
        `CPU per 1000 msg core ${cpu(core)} ms vs bare ${cpu(bare)} ms: SQLite's own work is the same SQL (hand-written, one row per statement, no Kysely compile); the rest is a cold process: the JIT warm-up of core's longer JS path in a run this short (in a warm process core and bare cost the same); closing it: fewer JS layers and allocations per message on apply's path (docs/benchmarks.md)`,
      ),
    );
  }
  for (const sync of ['FULL', 'NORMAL']) {
    const target = `SQLite batch 100, ${sync}: 2 worker processes ≥ ${REFERENCE_TARGETS.twoWorkersVsOne.toFixed(1)}× one, each ≥ ${REFERENCE_TARGETS.minShare * 100} %, no SQLITE_BUSY`;
    const one = find('core', sync, 1);
    const two = find('core', sync, 2);
    if (one === undefined || two === undefined) {
      out.push({
        target,
        ...NOT_RUN('the sqlite section (batch 100, 1 and 2 workers) did not run'),
      });
      continue;
    }
    const row = ratioRow(
      target,
      two.rate.median,
      one.rate.median,
      'msg/s',
      REFERENCE_TARGETS.twoWorkersVsOne,
      `one write lock, so the two processes' transactions run one after the other: a second process adds hand-offs, not capacity, and each hand-off costs CPU. CPU per 1000 msg ${cpu(two)} ms with 2 vs ${cpu(one)} ms with 1: after the other process commits, SQLite drops a connection's page cache and the next transaction re-reads its pages (the same index read measured 528 vs 256 µs); ${two.busyRetries} busy retries at ~12 µs each are a small part. One worker already spends 80-99 % of its time inside its write transactions, so a second can overlap little. Closing it: the handler run outside the lock on the payload the claim read (as the worker loop does), or one writer process running handlers concurrently (docs/benchmarks.md)`,
      `, smallest share ${Math.round(two.minShare * 100)} %, ${two.errors.length} errors`,
    );
    const fair = two.minShare >= REFERENCE_TARGETS.minShare && two.errors.length === 0;
    if (row.met === true && !fair) {
      row.met = false;
      row.why = 'faster, but not fair or not error-free: see the fair-sharing row';
    }
    out.push(row);
  }
  return out;
}

function enqueueRow(enqueue: readonly EnqueueLike[] | undefined): ReferenceTargetRow {
  const target = `enqueue, 1000-line batches, SQLite FULL, validation and dedup included ≥ ${fmtRate(REFERENCE_TARGETS.enqueueLinesPerSecond)} lines/s`;
  const full = enqueue?.find((r) => r.store === 'sqlite FULL');
  if (full === undefined) return { target, ...NOT_RUN('the enqueue section did not run') };
  const row = ratioRow(
    target,
    full.rate.median,
    REFERENCE_TARGETS.enqueueLinesPerSecond,
    'lines/s',
    1,
    enqueueWhy(full),
  );
  row.reference = `target ${row.reference}`;
  return row;
}

/** Why enqueue misses: parse, the bare insert and the floor they make, from this run. */
function enqueueWhy(full: EnqueueLike): string {
  const parse = `parse and validation alone run at ${fmtRate(full.parseRate.median)} lines/s`;
  const bare = full.bareRate;
  if (bare === undefined || bare.n === 0 || full.floorRate === undefined) {
    return `${parse}; the rest is SQLite: one WAL fsync per batch (FULL, the all-or-nothing unit) and the row inserts with their indexes, CHECKs and counter trigger`;
  }
  const noTrigger =
    full.bareNoTriggerRate !== undefined && full.bareNoTriggerRate.n > 0
      ? ` (${fmtRate(full.bareNoTriggerRate.median)} without the per-row counter trigger)`
      : '';
  const cpu =
    full.cpuMsPer1000 !== undefined &&
    full.floorCpuMsPer1000 !== undefined &&
    full.floorCpuMsPer1000.n > 0
      ? ` (CPU per 1000 lines: onceq ${fmtMs(full.cpuMsPer1000.median)} ms, floor ${fmtMs(full.floorCpuMsPer1000.median)} ms)`
      : '';
  return `${parse}; plain bun:sqlite inserting the same parsed rows into the same schema, one COMMIT (WAL fsync) per batch, runs at ${fmtRate(bare.median)} lines/s${noTrigger}, so parse + bare insert is a floor of ${fmtRate(full.floorRate.median)} lines/s on this machine before any of onceq's own work${cpu}; closing it: a faster disk (the fsync), a cheaper parser, counter upkeep per batch instead of per row`;
}

/** The server's work behind both kinds of figure, for the rows' why. */
const SERVER_WORK =
  'graphile-worker writes its job row per job and ends it with a DELETE, while onceq writes an effect row per message too (its index entries and a foreign-key check), fences each ACK in its WHERE and keeps the status counters; the claim and the ACK each write a new version of the message row with its index entries';
/** What onceq and graphile-worker wrote to the WAL per message, when both were read. */
function walNote(onceq: AnchorLike | undefined, graphile: AnchorLike | undefined): string {
  const ours = onceq?.walBytes?.median ?? Number.NaN;
  const theirs = graphile?.walBytes?.median ?? Number.NaN;
  if (!Number.isFinite(ours) || !Number.isFinite(theirs)) return '';
  return `; WAL per message: onceq ${fmtRate(ours)} B, graphile-worker ${fmtRate(theirs)} B (${(ours / theirs).toFixed(2)}×)`;
}
const CLOSING =
  'closing it: less written per message on the server (the hot path keyed by an integer sequence, the live queue apart from the done history: docs/operations.md)';

/** onceq's server CPU per message against graphile-worker's: met at or below the limit. */
function serverCpuRow(
  target: string,
  onceq: AnchorLike | undefined,
  graphile: AnchorLike | undefined,
  extra = '',
): ReferenceTargetRow {
  const ours = onceq?.serverCpuUs?.median ?? Number.NaN;
  const theirs = graphile?.serverCpuUs?.median ?? Number.NaN;
  if (!Number.isFinite(ours) || !Number.isFinite(theirs))
    return { target, ...NOT_RUN('the server CPU needs PostgreSQL on this machine') };
  const ratio = ours / theirs;
  const met = ratio <= REFERENCE_TARGETS.pgServerCpuVsGraphile;
  return {
    target,
    onceq: `${fmtRate(ours)} µs/msg${extra}`,
    reference: `${fmtRate(theirs)} µs/msg`,
    ratio: `${ratio.toFixed(2)}×`,
    met,
    why: met ? '' : `${SERVER_WORK}${walNote(onceq, graphile)}; ${CLOSING}`,
  };
}

function anchorRows(anchors: readonly AnchorLike[] | undefined): ReferenceTargetRow[] {
  const find = (key: string) => anchors?.find((r) => r.key === key);
  const rate = (key: string) => find(key)?.rate.median ?? Number.NaN;
  const out: ReferenceTargetRow[] = [];
  for (const workers of [1, 2]) {
    const batchTarget = `PostgreSQL batch mode, ${workers} worker(s): onceq ≥ ${REFERENCE_TARGETS.pgBatchVsGraphile}× graphile-worker batched`;
    const oneTarget = `PostgreSQL one message per transaction, ${workers} worker(s): onceq ≥ ${REFERENCE_TARGETS.pgPerMessageVsGraphile}× graphile-worker concurrency 1`;
    const cpuTarget = (what: string, theirs: string) =>
      `PostgreSQL server CPU per message, ${what}, ${workers} worker(s): onceq ≤ ${REFERENCE_TARGETS.pgServerCpuVsGraphile.toFixed(1)}× graphile-worker ${theirs}`;
    const batchCpuTarget = cpuTarget('batch mode', 'batched');
    const oneCpuTarget = cpuTarget('one message per transaction', 'concurrency 1');
    if (anchors === undefined) {
      for (const target of [batchTarget, oneTarget, batchCpuTarget, oneCpuTarget])
        out.push({ target, ...NOT_RUN('run with --anchors (and PostgreSQL)') });
      continue;
    }
    const b500 = rate(`onceq/pg/w${workers}/b500`);
    const b100 = rate(`onceq/pg/w${workers}/b100`);
    const bestBatch = b500 >= b100 || Number.isNaN(b100) ? 500 : 100;
    const best = Math.max(b500, b100);
    const graphileBatched = graphileKey(workers, 24, 500);
    const graphileOne = graphileKey(workers, 1, 0);
    out.push(
      ratioRow(
        batchTarget,
        best,
        rate(graphileBatched),
        'msg/s',
        REFERENCE_TARGETS.pgBatchVsGraphile,
        `onceq runs 2 statements a batch (claim; effect + ACK with the next claim), its next claim overlapped with the handler; graphile-worker runs its performance-page settings (local queue 500, completions batched); ${SERVER_WORK}${walNote(find(`onceq/pg/w${workers}/b${bestBatch}`), find(graphileBatched))}; ${CLOSING}`,
        ` (batch ${bestBatch})`,
      ),
    );
    out.push(
      ratioRow(
        oneTarget,
        rate(`onceq/pg/w${workers}/b1`),
        rate(graphileOne),
        'msg/s',
        REFERENCE_TARGETS.pgPerMessageVsGraphile,
        `onceq makes 1 statement a message (the fenced effect + ACK of message k and the claim of k+2, with lazy recovery, in one commit; the next handler runs meanwhile), graphile-worker 2 (get-job, complete-job); ${SERVER_WORK}${walNote(find(`onceq/pg/w${workers}/b1`), find(graphileOne))}; ${CLOSING}`,
      ),
    );
    out.push(
      serverCpuRow(
        batchCpuTarget,
        find(`onceq/pg/w${workers}/b${bestBatch}`),
        find(graphileBatched),
        ` (batch ${bestBatch})`,
      ),
    );
    out.push(serverCpuRow(oneCpuTarget, find(`onceq/pg/w${workers}/b1`), find(graphileOne)));
  }
  return out;
}

function statusRows(status: readonly StatusLike[] | undefined): ReferenceTargetRow[] {
  const out: ReferenceTargetRow[] = [];
  for (const backend of ['sqlite', 'pg']) {
    const found = status?.find((s) => s.backend === backend && s.messages === 100_000);
    const name = backend === 'pg' ? 'PostgreSQL' : 'SQLite';
    for (const [what, limit, pick] of [
      ['status', REFERENCE_TARGETS.statusMs, (s: StatusLike) => s.statusMs],
      ['claim', REFERENCE_TARGETS.claimMs, (s: StatusLike) => s.claimMs],
    ] as const) {
      const target = `${what} on 100,000 messages, ${name} < ${limit} ms`;
      if (found === undefined) {
        out.push({ target, ...NOT_RUN(`the status section did not run on ${name}`) });
        continue;
      }
      const ms = pick(found).median;
      const met = ms < limit;
      out.push({
        target,
        onceq: `${fmtMs(ms)} ms`,
        reference: `limit ${limit} ms`,
        ratio: `${(ms / limit).toFixed(2)} of the limit`,
        met,
        why: met ? '' : 'see the query plan printed in the status section',
      });
    }
  }
  return out;
}

/** Builds the rows from what the sections measured in this run. */
export function referenceTargetRows(results: Record<string, unknown>): ReferenceTargetRow[] {
  const processing = (results.processing as ProcessingLike[] | undefined) ?? [];
  const anchors = (results.anchors as { rows?: AnchorLike[] } | undefined)?.rows;
  return [
    ...sqliteRows(processing),
    enqueueRow(results.enqueue as EnqueueLike[] | undefined),
    ...anchorRows(anchors),
    ...statusRows(results.status as StatusLike[] | undefined),
  ];
}

/** Prints the table of targets (run after every other section). */
export function referenceTargetsSection(ctx: SectionContext): void {
  const rows = referenceTargetRows(ctx.results);
  ctx.results.referenceTargets = rows;
  ctx.out.push(section('Targets, each next to its reference from this run'));
  ctx.out.push(
    table(
      ['target', 'onceq', 'reference', 'ratio', 'met'],
      rows.map((r) => [
        r.target,
        r.onceq,
        r.reference,
        r.ratio,
        r.met === null ? 'n/a' : r.met ? 'yes' : 'NO',
      ]),
    ),
  );
  const misses = rows.filter((r) => r.why !== '');
  if (misses.length > 0) {
    ctx.out.push('\nwhy, and what would close it:');
    for (const r of misses) ctx.out.push(`- ${r.target}: ${r.why}`);
  }
}
