/**
 * Processing throughput: claim → v1 handler → apply + ACK with 1 or 2 worker processes,
 * core and the bare baseline, SQLite and PostgreSQL; a handler writing a row of its own
 * beside the money effect; the recommended batch and targets.
 */

import type { SectionContext, TargetRow } from '../context.ts';
import type { Options } from '../options.ts';
import { TARGETS } from '../options.ts';
import { msCell, rateCell, section, table } from '../report.ts';
import {
  configKey,
  type ProcessingConfig,
  type ProcessingRun,
  pgFactory,
  runProcessing,
  type StoreFactory,
} from '../scenarios/processing.ts';
import { fmtMs, fmtRate, type Spread, spread } from '../util.ts';

interface ProcessingSummary {
  config: ProcessingConfig;
  key: string;
  rate: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  /** Smallest share any worker got, over all runs. */
  minShare: number;
  shares: number[][];
  busyRetries: number;
  /** CPU ms per 1000 messages, all workers (robust to a loaded machine, unlike the rate). */
  cpuMsPer1000: Spread;
  txPerMessage: number;
  errors: string[];
  verified: boolean;
  runs: ProcessingRun[];
}

function summarize(config: ProcessingConfig, runs: ProcessingRun[]): ProcessingSummary {
  return {
    config,
    key: configKey(config),
    rate: spread(runs.map((r) => r.rate)),
    p50Ms: spread(runs.map((r) => r.p50Ms)),
    p99Ms: spread(runs.map((r) => r.p99Ms)),
    minShare: Math.min(...runs.flatMap((r) => r.shares)),
    shares: runs.map((r) => r.shares),
    busyRetries: runs.reduce((n, r) => n + r.busyRetries, 0),
    cpuMsPer1000: spread(runs.map((r) => r.cpuMsPer1000)),
    txPerMessage: runs[0]?.txPerMessage ?? Number.NaN,
    errors: runs.flatMap((r) => r.errors),
    verified: runs.every((r) => r.verified),
    runs,
  };
}

/**
 * What to measure. Per-message runs are slow (two commits per message), so they use
 * fewer messages, except the 2-worker SQLite FULL run, which checks fair sharing of
 * the full set; PostgreSQL runs are capped too, to keep the default run under ~10 min.
 */
function processingConfigs(
  backend: 'sqlite' | 'pg',
  batchSizes: number[],
  messages: number,
): ProcessingConfig[] {
  const out: ProcessingConfig[] = [];
  const syncs = backend === 'sqlite' ? (['FULL', 'NORMAL'] as const) : (['FULL'] as const);
  const sizes =
    backend === 'pg' ? batchSizes.filter((b) => [1, 10, 100, 500].includes(b)) : batchSizes;
  for (const synchronous of syncs)
    for (const workers of [1, 2])
      for (const batch of sizes) {
        const fairness = backend === 'sqlite' && synchronous === 'FULL' && workers === 2;
        const n =
          backend === 'pg'
            ? Math.min(messages, batch === 1 ? 2000 : 5000)
            : batch === 1 && !fairness
              ? Math.min(messages, 3000)
              : messages;
        const config = { backend, synchronous, workers, batch, messages: n };
        out.push({ ...config, impl: 'core', effect: 'money' });
        // A row of the handler's own instead of the money effect, next to it in the same
        // round-robin: the cost of a user's completion (1 worker, batch 100, FULL).
        if (workers === 1 && batch === 100 && synchronous === 'FULL') {
          out.push({ ...config, impl: 'core', effect: 'own-row' });
          out.push({ ...config, impl: 'core', effect: 'own-row-write' });
        }
        // The bare baseline at per-message mode and one batch size, for the ratios.
        if (backend === 'sqlite' && (batch === 1 || batch === 100))
          out.push({ ...config, impl: 'bare', effect: 'money' });
      }
  return out;
}

async function measureProcessing(
  factory: StoreFactory,
  configs: ProcessingConfig[],
  opts: Options,
  log: (line: string) => void,
): Promise<ProcessingSummary[]> {
  const runs = new Map<string, ProcessingRun[]>(configs.map((c) => [configKey(c), []]));
  // Round-robin over configurations, so a noisy minute hurts every one a little.
  for (let r = 0; r < opts.runs; r++) {
    for (const config of configs) {
      const run = await runProcessing(factory, config);
      runs.get(configKey(config))?.push(run);
      log(
        `  run ${r + 1}/${opts.runs} ${configKey(config).padEnd(34)} ${fmtRate(run.rate).padStart(7)} msg/s  shares ${run.shares.map((s) => `${Math.round(s * 100)}%`).join('/')}  p50 ${fmtMs(run.p50Ms)} ms  p99 ${fmtMs(run.p99Ms)} ms${run.errors.length ? `  ERRORS ${run.errors.join('; ')}` : ''}${run.verified ? '' : `  NOT VERIFIED ${run.verifyDetail}`}`,
      );
    }
  }
  return configs.map((c) => summarize(c, runs.get(configKey(c)) ?? []));
}

/** The table's name of each effect: the own row declared as `insert`, or by `write(tx)`. */
const EFFECT_LABELS: Record<ProcessingConfig['effect'], string> = {
  money: 'money',
  'own-row': 'own row',
  'own-row-write': 'own row (write)',
};

/** The rows of the lesson's money effect: what every target but the own-row one reads. */
function moneyRows(rows: readonly ProcessingSummary[]): ProcessingSummary[] {
  return rows.filter((r) => r.config.effect === 'money');
}

function processingTable(rows: ProcessingSummary[]): string {
  const bareRow = (c: ProcessingConfig) =>
    rows.find(
      (r) =>
        r.config.impl === 'bare' &&
        c.effect === 'money' &&
        r.config.backend === c.backend &&
        r.config.synchronous === c.synchronous &&
        r.config.workers === c.workers &&
        r.config.batch === c.batch,
    );
  return table(
    [
      'backend',
      'sync',
      'impl',
      'effect',
      'workers',
      'batch',
      'messages',
      'msg/s median (min–max)',
      '÷bare',
      'CPU ms/1000 msg',
      'bare CPU ÷ core CPU',
      'shares (min)',
      'p50 ms',
      'p99 ms',
      'busy retries',
      'tx/msg',
      'errors',
      'exactly-once',
    ],
    rows.map((r) => {
      const bareSummary = r.config.impl === 'core' ? bareRow(r.config) : undefined;
      const bare = bareSummary?.rate.median;
      return [
        r.config.backend,
        r.config.backend === 'sqlite' ? r.config.synchronous : '–',
        r.config.impl,
        EFFECT_LABELS[r.config.effect],
        String(r.config.workers),
        String(r.config.batch),
        String(r.config.messages),
        rateCell(r.rate),
        bare === undefined ? '' : `${(r.rate.median / bare).toFixed(2)}×`,
        fmtMs(r.cpuMsPer1000.median),
        bareSummary === undefined
          ? ''
          : `${(bareSummary.cpuMsPer1000.median / r.cpuMsPer1000.median).toFixed(2)}×`,
        r.config.workers > 1 ? `${Math.round(r.minShare * 100)}%` : '',
        msCell(r.p50Ms),
        msCell(r.p99Ms),
        String(r.busyRetries),
        r.txPerMessage.toFixed(2),
        String(r.errors.length),
        r.verified ? 'ok' : 'FAILED',
      ];
    }),
  );
}

/**
 * The knee of SQLite FULL single-worker throughput: the smallest batch after which a
 * doubling of the batch gains less than 25 %, or after which p99 latency grows faster
 * than the batch (latency and the work a crash throws away grow with the batch;
 * throughput no longer does). Fairness of the 2-worker run at that batch is reported.
 */
function recommendBatch(rows: ProcessingSummary[]): { batch: number | null; reason: string } {
  const full = moneyRows(rows).filter(
    (r) =>
      r.config.backend === 'sqlite' && r.config.impl === 'core' && r.config.synchronous === 'FULL',
  );
  const single = full
    .filter((r) => r.config.workers === 1)
    .sort((a, b) => a.config.batch - b.config.batch);
  if (single.length === 0) return { batch: null, reason: 'no SQLite FULL runs' };
  const gains: string[] = [];
  let pick = single[single.length - 1] as ProcessingSummary;
  for (let i = 0; i + 1 < single.length; i++) {
    const a = single[i] as ProcessingSummary;
    const b = single[i + 1] as ProcessingSummary;
    const perDoubling =
      (b.rate.median / a.rate.median) ** (1 / Math.log2(b.config.batch / a.config.batch)) - 1;
    const latencyGrowth = b.p99Ms.median / a.p99Ms.median;
    gains.push(
      `${a.config.batch}→${b.config.batch}: ${Math.round(perDoubling * 100)} % (p99 ×${latencyGrowth.toFixed(1)})`,
    );
    const knee = perDoubling < 0.25 || latencyGrowth > b.config.batch / a.config.batch;
    if (knee && pick === single[single.length - 1]) pick = a;
  }
  const pair = full.find((r) => r.config.workers === 2 && r.config.batch === pick.config.batch);
  const fair =
    pair === undefined
      ? 'no 2-worker run'
      : pair.minShare >= TARGETS.fairShare && pair.errors.length === 0
        ? `2 workers fair (smallest share ${Math.round(pair.minShare * 100)} %)`
        : `2 workers NOT fair yet (smallest share ${Math.round(pair.minShare * 100)} %, see the fair-sharing target)`;
  return {
    batch: pick.config.batch,
    reason: `knee of SQLite FULL 1-worker throughput: ${fmtRate(pick.rate.median)} msg/s, p50 ${fmtMs(pick.p50Ms.median)} ms; throughput gain per doubling of the batch ${gains.join(', ')}; ${fair}`,
  };
}

function addProcessingTargets(
  rows: ProcessingSummary[],
  batch: number | null,
  targets: TargetRow[],
  messages: number,
): void {
  addOwnRowTargets(rows, targets);
  const money = moneyRows(rows);
  const find = (backend: string, impl: string, sync: string, workers: number, b: number) =>
    money.find(
      (r) =>
        r.config.backend === backend &&
        r.config.impl === impl &&
        (backend === 'pg' || r.config.synchronous === sync) &&
        r.config.workers === workers &&
        r.config.batch === b,
    );
  const sqliteRows = money.filter((r) => r.config.backend === 'sqlite');
  if (sqliteRows.length > 0) {
    for (const workers of [1, 2]) {
      const best = sqliteRows
        .filter(
          (r) =>
            r.config.impl === 'core' &&
            r.config.synchronous === 'FULL' &&
            r.config.workers === workers &&
            r.config.batch > 1,
        )
        .sort((a, b) => b.rate.median - a.rate.median)[0];
      const atDefault = batch === null ? undefined : find('sqlite', 'core', 'FULL', workers, batch);
      const shown = atDefault ?? best;
      if (shown)
        targets.push({
          target: `SQLite FULL batch mode ≥ ${fmtRate(TARGETS.sqliteFullBatch)} msg/s (${workers} worker${workers > 1 ? 's' : ''}, batch ${shown.config.batch})`,
          measured: `${rateCell(shown.rate)} msg/s${best && best !== shown ? `; best batch ${best.config.batch}: ${fmtRate(best.rate.median)}` : ''}`,
          met: shown.rate.median >= TARGETS.sqliteFullBatch,
        });
    }
    for (const sync of ['FULL', 'NORMAL'])
      for (const workers of [1, 2]) {
        const core = find('sqlite', 'core', sync, workers, 1);
        const bare = find('sqlite', 'bare', sync, workers, 1);
        if (core && bare)
          targets.push({
            target: `SQLite per-message ≥ ${TARGETS.perMessageVsBare}× bare (${sync}, ${workers} worker${workers > 1 ? 's' : ''})`,
            measured: `${fmtRate(core.rate.median)} vs ${fmtRate(bare.rate.median)} msg/s = ${(core.rate.median / bare.rate.median).toFixed(2)}×${bare.errors.length ? ` (bare had ${bare.errors.length} SQLITE_BUSY errors)` : ''}`,
            met: core.rate.median >= TARGETS.perMessageVsBare * bare.rate.median,
          });
      }
    const pairs = sqliteRows.filter((r) => r.config.impl === 'core' && r.config.workers === 2);
    if (pairs.length > 0) {
      const minShare = Math.min(...pairs.map((r) => r.minShare));
      const worst = pairs.find((r) => r.minShare === minShare);
      const errors = pairs.reduce((n, r) => n + r.errors.length, 0);
      targets.push({
        target: `fair sharing: 2 workers on one SQLite file each ≥ 30 %, no SQLITE_BUSY (every core 2-worker run; FULL ones on ${fmtRate(messages)} messages)`,
        measured: `smallest share ${Math.round(minShare * 100)}% (${worst?.key}, ${worst?.config.messages} messages); ${errors} errors`,
        met: minShare >= TARGETS.fairShare && errors === 0,
      });
    }
  }
  const pgRows = money.filter((r) => r.config.backend === 'pg');
  if (pgRows.length > 0) {
    const best = pgRows
      .filter((r) => r.config.batch > 1)
      .sort((a, b) => b.rate.median - a.rate.median)[0];
    if (best)
      targets.push({
        target: `PostgreSQL batch ≥ ${fmtRate(TARGETS.pgBatch)} msg/s (best: ${best.config.workers} worker(s), batch ${best.config.batch})`,
        measured: `${rateCell(best.rate)} msg/s`,
        met: best.rate.median >= TARGETS.pgBatch,
      });
    for (const workers of [1, 2]) {
      const per = find('pg', 'core', 'FULL', workers, 1);
      if (per)
        targets.push({
          target: `PostgreSQL per-message ≥ ${fmtRate(TARGETS.pgPerMessage)} msg/s (${workers} worker${workers > 1 ? 's' : ''})`,
          measured: `${rateCell(per.rate)} msg/s`,
          met: per.rate.median >= TARGETS.pgPerMessage,
        });
    }
  }
}

/**
 * A handler writing one row of its own per message (a completion) against the money
 * effect, at batch 100 with 1 worker (SQLite FULL), same run: the own row (declared as
 * `insert`, the way the docs recommend for plain rows) costs at most
 * {@link TARGETS.ownRowVsMoney}'s complement of the throughput.
 */
function addOwnRowTargets(rows: readonly ProcessingSummary[], targets: TargetRow[]): void {
  for (const own of rows.filter((r) => r.config.effect === 'own-row')) {
    const c = own.config;
    const money = rows.find(
      (r) =>
        r.config.effect === 'money' &&
        r.config.impl === c.impl &&
        r.config.backend === c.backend &&
        r.config.synchronous === c.synchronous &&
        r.config.workers === c.workers &&
        r.config.batch === c.batch,
    );
    if (money === undefined) continue;
    const ratio = own.rate.median / money.rate.median;
    const where = c.backend === 'sqlite' ? `SQLite ${c.synchronous}` : 'PostgreSQL';
    targets.push({
      target: `own row per message ≥ ${TARGETS.ownRowVsMoney}× the money effect (${where}, ${c.workers} worker, batch ${c.batch}, same run)`,
      measured: `${fmtRate(own.rate.median)} vs ${fmtRate(money.rate.median)} msg/s = ${ratio.toFixed(2)}×; CPU ms/1000 msg ${fmtMs(own.cpuMsPer1000.median)} vs ${fmtMs(money.cpuMsPer1000.median)}`,
      met: ratio >= TARGETS.ownRowVsMoney,
    });
  }
}

export async function processingSection(ctx: SectionContext): Promise<void> {
  const { opts, sqlite, pgUrl, pgSkip, out, targets, results, log } = ctx;
  const processing: ProcessingSummary[] = [];
  if (opts.only.has('sqlite')) {
    log('SQLite processing …');
    processing.push(
      ...(await measureProcessing(
        sqlite,
        processingConfigs('sqlite', opts.batchSizes, opts.messages),
        opts,
        log,
      )),
    );
  }
  if (opts.only.has('pg') && pgUrl !== null) {
    log('PostgreSQL processing …');
    processing.push(
      ...(await measureProcessing(
        pgFactory(pgUrl),
        processingConfigs('pg', opts.batchSizes, opts.messages),
        opts,
        log,
      )),
    );
  }
  if (processing.length > 0) {
    results.processing = processing;
    out.push(
      section(
        `Processing: claim → v1 handler → apply + ACK, ${opts.messages} messages per run, ${opts.runs} run(s); latency = claim call to ACK commit; effect "own row" = v1's checks, then one row of the handler's own per message declared as a completion's insert instead of the money effect; "own row (write)" = the same row through the completion's write(tx), one statement per message`,
      ),
    );
    out.push(processingTable(processing));
    const rec = recommendBatch(processing);
    results.recommendedBatch = rec;
    if (rec.batch !== null) out.push(`\nRecommended default --batch: ${rec.batch} (${rec.reason})`);
    addProcessingTargets(processing, rec.batch, targets, opts.messages);
  }
  if (opts.only.has('pg') && pgUrl === null) {
    results.pg = { skipped: pgSkip };
    out.push(section('PostgreSQL'));
    out.push(`skipped: ${pgSkip}`);
    targets.push({
      target: `PostgreSQL batch ≥ ${fmtRate(TARGETS.pgBatch)} msg/s`,
      measured: `not measured (${pgSkip})`,
      met: null,
    });
    targets.push({
      target: `PostgreSQL per-message ≥ ${fmtRate(TARGETS.pgPerMessage)} msg/s`,
      measured: 'not measured',
      met: null,
    });
  }
}
