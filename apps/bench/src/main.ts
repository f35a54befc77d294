/**
 * `bun run bench`: onceq's reproducible benchmark. Prints tables and writes
 * `bench-results/bench-<time>.json` (and `latest.json`).
 *
 *   --quick            1000 messages, one run, batches 1,100 (a ~1 minute smoke)
 *   --runs N           repetitions of every measurement (median, min–max); default 3
 *   --messages N       messages per processing run, ≤ 10000 (event ids E0000–E9999); default 10000
 *   --batches 1,10,…   batch sizes to measure; default 1,10,50,100,200,500
 *   --only LIST        comma list of: sqlite, pg, enqueue, status, overhead
 *   --pg URL           PostgreSQL to measure (else DATABASE_URL, else a throwaway
 *                      cluster from scripts/pg-cluster.sh when one can be started)
 */
import { existsSync } from 'node:fs';
import { cpus, loadavg, platform, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openStore } from '@onceq/core';
import { msCell, rateCell, section, table, writeJson } from './report.ts';
import { type EnqueueRun, runEnqueue } from './scenarios/enqueue.ts';
import { type OverheadResult, runOverhead } from './scenarios/overhead.ts';
import {
  configKey,
  type ProcessingConfig,
  type ProcessingRun,
  pgFactory,
  runProcessing,
  type StoreFactory,
  sqliteFactory,
} from './scenarios/processing.ts';
import { measureService } from './scenarios/service.ts';
import { runPgStatus, runSqliteStatus, type StatusResult } from './scenarios/status.ts';
import {
  errorText,
  fmtMs,
  fmtRate,
  removeScratch,
  type Spread,
  scratchDir,
  spread,
} from './util.ts';

const ROOT = join(import.meta.dir, '..', '..', '..');
const SECTIONS = ['sqlite', 'pg', 'enqueue', 'status', 'overhead', 'service'] as const;
type Section = (typeof SECTIONS)[number];

const TARGETS = {
  sqliteFullBatch: 20_000,
  perMessageVsBare: 0.8,
  enqueue: 150_000,
  pgBatch: 18_000,
  pgPerMessage: 1_000,
  statusMs: 100,
  fairShare: 0.3,
};

interface Options {
  quick: boolean;
  runs: number;
  messages: number;
  batchSizes: number[];
  only: Set<Section>;
  pgUrl: string | null;
}

function usage(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

const HELP = `usage: bun run bench [flags]

Measures onceq and a bare bun:sqlite baseline on this machine; prints a table to stdout
and writes bench-results/latest.json. Progress goes to stderr.

flags:
  --quick            fewer messages and one run each (about half a minute)
  --runs <N>         runs per setting; the table shows the median (min–max). Default 3
  --messages <N>     messages per processing run, at most 10000. Default 10000
  --batches <list>   batch sizes to sweep, e.g. 1,100. Default 1,10,50,100,200,500
  --only <list>      sections: ${SECTIONS.join(', ')}. Default all
  --pg <url>         PostgreSQL to measure (default $DATABASE_URL, else a throwaway
                     cluster from scripts/pg-cluster.sh when PostgreSQL is installed)
  -h, --help         this text
`;

function options(): Options {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags();
  } catch (error) {
    usage(`${(error as Error).message} (see bun run bench --help)`);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name: string, text: string | undefined, fallback: number, max = Infinity) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) usage(`--${name} must be an integer 1…${max}`);
    return n;
  };
  const quick = values.quick ?? false;
  const only = new Set<Section>();
  for (const part of (values.only ?? SECTIONS.join(',')).split(',')) {
    if (!(SECTIONS as readonly string[]).includes(part))
      usage(`--only takes ${SECTIONS.join(', ')}`);
    only.add(part as Section);
  }
  const batchSizes = (values.batches ?? (quick ? '1,100' : '1,10,50,100,200,500'))
    .split(',')
    .map((b) => int('batches', b, 1));
  return {
    quick,
    runs: int('runs', values.runs, quick ? 1 : 3),
    messages: int('messages', values.messages, quick ? 1000 : 10_000, 10_000),
    batchSizes,
    only,
    pgUrl: values.pg ?? process.env.DATABASE_URL ?? null,
  };
}

function parseFlags() {
  return parseArgs({
    args: Bun.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      messages: { type: 'string' },
      batches: { type: 'string' },
      only: { type: 'string' },
      pg: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
}

function log(text: string): void {
  process.stderr.write(`${text}\n`);
}

/** A PostgreSQL to use, and how to stop it: given, or a throwaway cluster. */
async function findPostgres(
  given: string | null,
  scratch: string,
): Promise<{ url: string | null; note: string; stop: () => Promise<void> }> {
  const none = async () => {};
  if (given !== null) return { url: given, note: 'given URL', stop: none };
  const script = join(ROOT, 'scripts', 'pg-cluster.sh');
  if (!existsSync(script))
    return { url: null, note: 'no URL and no scripts/pg-cluster.sh', stop: none };
  const env = { ...process.env, ONCEQ_PG_STATE: join(scratch, 'pg.state') };
  const start = Bun.spawnSync(['bash', script, 'start'], { env, stderr: 'pipe' });
  const stop = async () => {
    Bun.spawnSync(['bash', script, 'stop'], { env });
  };
  const url = start.stdout.toString().trim().split('\n').pop() ?? '';
  if (start.exitCode !== 0 || !/^postgres/.test(url)) {
    await stop();
    return {
      url: null,
      note: `pg-cluster.sh start failed (exit ${start.exitCode}): ${start.stderr.toString().trim().slice(-200)}`,
      stop: none,
    };
  }
  return {
    url,
    note: 'throwaway cluster from scripts/pg-cluster.sh (fsync=off, synchronous_commit=off)',
    stop,
  };
}

/** Can core open this PostgreSQL? (The backend may not exist yet.) */
async function probePostgres(url: string): Promise<string | null> {
  const schema = `onceq_bench_probe_${process.pid}`;
  try {
    const store = await openStore(url, { schema });
    await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
    await store.close();
    return null;
  } catch (error) {
    return errorText(error);
  }
}

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
        out.push({ backend, impl: 'core', synchronous, workers, batch, messages: n });
        // The bare baseline at per-message mode and one batch size, for the ratios.
        if (backend === 'sqlite' && (batch === 1 || batch === 100))
          out.push({ backend, impl: 'bare', synchronous, workers, batch, messages: n });
      }
  return out;
}

async function measureProcessing(
  factory: StoreFactory,
  configs: ProcessingConfig[],
  opts: Options,
): Promise<ProcessingSummary[]> {
  const runs = new Map<string, ProcessingRun[]>(configs.map((c) => [configKey(c), []]));
  // Round-robin over configurations, so a noisy minute hurts every one a little.
  for (let r = 0; r < opts.runs; r++) {
    for (const config of configs) {
      const run = await runProcessing(factory, config);
      runs.get(configKey(config))?.push(run);
      log(
        `  run ${r + 1}/${opts.runs} ${configKey(config).padEnd(26)} ${fmtRate(run.rate).padStart(7)} msg/s  shares ${run.shares.map((s) => `${Math.round(s * 100)}%`).join('/')}  p50 ${fmtMs(run.p50Ms)} ms  p99 ${fmtMs(run.p99Ms)} ms${run.errors.length ? `  ERRORS ${run.errors.join('; ')}` : ''}${run.verified ? '' : `  NOT VERIFIED ${run.verifyDetail}`}`,
      );
    }
  }
  return configs.map((c) => summarize(c, runs.get(configKey(c)) ?? []));
}

function processingTable(rows: ProcessingSummary[]): string {
  const bareRate = (c: ProcessingConfig) =>
    rows.find(
      (r) =>
        r.config.impl === 'bare' &&
        r.config.backend === c.backend &&
        r.config.synchronous === c.synchronous &&
        r.config.workers === c.workers &&
        r.config.batch === c.batch,
    )?.rate.median;
  return table(
    [
      'backend',
      'sync',
      'impl',
      'workers',
      'batch',
      'msg/s median (min–max)',
      '÷bare',
      'shares (min)',
      'p50 ms',
      'p99 ms',
      'busy retries',
      'tx/msg',
      'errors',
      'exactly-once',
    ],
    rows.map((r) => {
      const bare = r.config.impl === 'core' ? bareRate(r.config) : undefined;
      return [
        r.config.backend,
        r.config.backend === 'sqlite' ? r.config.synchronous : '–',
        r.config.impl,
        String(r.config.workers),
        String(r.config.batch),
        String(r.config.messages),
        rateCell(r.rate),
        bare === undefined ? '' : `${(r.rate.median / bare).toFixed(2)}×`,
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
  const full = rows.filter(
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

interface TargetRow {
  target: string;
  measured: string;
  met: boolean | null;
}

async function main(): Promise<void> {
  const opts = options();
  const scratch = scratchDir('run');
  const started = new Date();
  const meta = {
    started: started.toISOString(),
    bun: Bun.version,
    platform: `${platform()} ${release()}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    loadavgAtStart: loadavg(),
    commit: Bun.spawnSync(['git', 'rev-parse', 'HEAD'], { cwd: ROOT }).stdout.toString().trim(),
    options: { ...opts, only: [...opts.only] },
  };
  log(
    `onceq bench: ${opts.runs} run(s), ${opts.messages} messages, batches ${opts.batchSizes.join(',')}, sections ${[...opts.only].join(',')}`,
  );
  log(
    `bun ${meta.bun}, ${meta.cpus} cpu(s) ${meta.cpuModel}, load ${meta.loadavgAtStart.map((l) => l.toFixed(2)).join(' ')}`,
  );

  const out: string[] = [];
  const targets: TargetRow[] = [];
  const results: Record<string, unknown> = { meta };
  const sqlite = sqliteFactory(scratch);

  let pg: Awaited<ReturnType<typeof findPostgres>> | null = null;
  // Interrupted: stop the throwaway cluster and remove scratch files before exiting.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      void pg?.stop();
      removeScratch(scratch);
      process.exit(130);
    });
  let pgSkip: string | null = null;
  if (opts.only.has('pg') || opts.only.has('service')) {
    pg = await findPostgres(opts.pgUrl, scratch);
    if (pg.url === null) pgSkip = pg.note;
    else pgSkip = await probePostgres(pg.url);
    if (pgSkip !== null) log(`PostgreSQL skipped: ${pgSkip}`);
    else log(`PostgreSQL: ${pg.note}`);
  }
  const pgUrl = pgSkip === null ? (pg?.url ?? null) : null;

  try {
    // ---- enqueue ----
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
          ],
          rows.map((r) => [r.store, rateCell(r.rate), msCell(r.batchMs), rateCell(r.parseRate)]),
        ),
      );
      const full = rows.find((r) => r.store === 'sqlite FULL');
      if (full)
        targets.push({
          target: `enqueue 1000-line batch ≥ ${fmtRate(TARGETS.enqueue)} lines/s (SQLite FULL)`,
          measured: `${rateCell(full.rate)} lines/s`,
          met: full.rate.median >= TARGETS.enqueue,
        });
    }

    // ---- processing ----
    const processing: ProcessingSummary[] = [];
    if (opts.only.has('sqlite')) {
      log('SQLite processing …');
      processing.push(
        ...(await measureProcessing(
          sqlite,
          processingConfigs('sqlite', opts.batchSizes, opts.messages),
          opts,
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
        )),
      );
    }
    if (processing.length > 0) {
      results.processing = processing;
      out.push(
        section(
          `Processing: claim → v1 handler → apply + ACK, ${opts.messages} messages per run, ${opts.runs} run(s); latency = claim call to ACK commit`,
        ),
      );
      out.push(processingTable(processing));
      const rec = recommendBatch(processing);
      results.recommendedBatch = rec;
      if (rec.batch !== null)
        out.push(`\nRecommended default --batch: ${rec.batch} (${rec.reason})`);
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

    // ---- status ----
    if (opts.only.has('status')) {
      const repeats = opts.quick ? 5 : 20;
      const found: StatusResult[] = [];
      log('status on 100,000 messages (SQLite) …');
      found.push(await runSqliteStatus(join(scratch, 'status.db'), 100_000, repeats));
      if (pgUrl !== null) {
        log('status on 100,000 messages (PostgreSQL) …');
        try {
          found.push(await runPgStatus(pgUrl, 100_000, repeats));
        } catch (error) {
          log(`PostgreSQL status skipped: ${errorText(error)}`);
        }
      }
      results.status = found;
      for (const st of found) {
        out.push(
          section(
            `status() and claim on ${fmtRate(st.messages)} messages (${st.backend}, synthetic ids, see scenarios/status.ts)`,
          ),
        );
        out.push(
          table(
            ['operation', 'ms median (min–max)'],
            [
              ['status()', msCell(st.statusMs)],
              ['claimMany(limit 1) incl. recovery', msCell(st.claimMs)],
            ],
          ),
        );
        for (const p of st.plans)
          out.push(
            `\n${st.backend === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} — ${p.query}\n  ${p.sql}\n${p.plan.map((l) => `    ${l}`).join('\n')}`,
          );
        targets.push({
          target: `status on 100,000 messages < ${TARGETS.statusMs} ms (${st.backend})`,
          measured: `${msCell(st.statusMs)} ms`,
          met: st.statusMs.median < TARGETS.statusMs,
        });
      }
    }

    // ---- service (the long-running worker) ----
    if (opts.only.has('service')) {
      const n = Math.min(opts.messages, opts.quick ? 1000 : 5000);
      const service = await measureService(scratch, pgUrl, n, log);
      results.service = service.results;
      out.push(...service.lines);
      targets.push(...service.targets);
    }

    // ---- overhead ----
    if (opts.only.has('overhead')) {
      log('overhead breakdown …');
      const n = Math.min(opts.messages, opts.quick ? 500 : 3000);
      const rs: OverheadResult[] = [];
      for (let r = 0; r < opts.runs; r++) rs.push(await runOverhead(sqlite, n));
      const key = (k: keyof OverheadResult) => spread(rs.map((r) => r[k]));
      const rows: [string, Spread][] = [
        ['core per-message cycle (claim tx + apply tx), µs/msg', key('coreCycleUs')],
        ['bare per-message cycle, µs/msg', key('bareCycleUs')],
        [
          'Kysely build+compile of the 5 statements of a cycle (what a per-message compile costs), µs',
          key('kyselyCompileUs'),
        ],
        ['empty store.writeTransaction, µs (×2 per message)', key('kyselyTxUs')],
        ['empty raw BEGIN IMMEDIATE;COMMIT, µs (×2 per message)', key('rawTxUs')],
        ['parseJson + v1 handler, µs/msg (core and bare alike)', key('handlerUs')],
      ];
      results.overhead = Object.fromEntries(rows.map(([k, v]) => [k, v]));
      out.push(
        section(
          `Per-message overhead breakdown: one process, SQLite NORMAL, ${n} messages, ${opts.runs} run(s)`,
        ),
      );
      out.push(
        table(
          ['what', 'µs median (min–max)'],
          rows.map(([k, v]) => [k, msCell(v)]),
        ),
      );
    }
  } finally {
    await pg?.stop();
    removeScratch(scratch);
  }

  out.push(section('Targets'));
  if (opts.quick) {
    out.push(
      'quick run: one run of 1,000 messages per setting is a smoke test, too small to judge a target (batch 100 is 10 transactions); run without --quick for the figures',
    );
  }
  out.push(
    table(
      ['target', 'measured', 'met'],
      targets.map((t) => [t.target, t.measured, t.met === null ? 'n/a' : t.met ? 'yes' : 'NO']),
    ),
  );
  results.targets = targets;
  results.finished = new Date().toISOString();
  results.loadavgAtEnd = loadavg();
  const path = writeJson(ROOT, results);
  out.push(
    `\nload average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )} (${meta.cpus} cpus); took ${Math.round((Date.now() - started.getTime()) / 1000)} s`,
  );
  out.push(`results: ${path}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

function addProcessingTargets(
  rows: ProcessingSummary[],
  batch: number | null,
  targets: TargetRow[],
  messages: number,
): void {
  const find = (backend: string, impl: string, sync: string, workers: number, b: number) =>
    rows.find(
      (r) =>
        r.config.backend === backend &&
        r.config.impl === impl &&
        (backend === 'pg' || r.config.synchronous === sync) &&
        r.config.workers === workers &&
        r.config.batch === b,
    );
  const sqliteRows = rows.filter((r) => r.config.backend === 'sqlite');
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
  const pgRows = rows.filter((r) => r.config.backend === 'pg');
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

await main();
