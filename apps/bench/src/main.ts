/**
 * `bun run bench`: onceq's reproducible benchmark. Prints tables and writes
 * `bench-results/bench-<time>.json` (and `latest.json`).
 *
 *   --quick            1000 messages, one run, batches 1,100 (a ~1 minute smoke)
 *   --runs N           repetitions of every measurement (median, min–max); default 3
 *   --messages N       messages per processing run, ≤ 10000 (event ids E0000–E9999); default 10000
 *   --batches 1,10,…   batch sizes to measure; default 1,10,50,100,200,500
 *   --only LIST        comma list of sections (see options.ts), e.g. sqlite, pg, webhooks
 *   --anchors          also run plainjob, graphile-worker and pg-boss next to onceq
 *   --anchor-keys LIST only those anchors settings (key prefixes, e.g. onceq/pg/w1/b1)
 *   --growth-sizes, --growth-window, --soak-minutes: sizes of the growth and soak sections
 *   --write-docs       write docs/benchmarks.md from this run
 *   --pg URL           PostgreSQL to measure (else DATABASE_URL, else a throwaway
 *                      cluster from scripts/pg-cluster.sh when one can be started)
 */
import { cpus, loadavg, platform, release } from 'node:os';
import { join } from 'node:path';
import type { SectionContext, TargetRow } from './context.ts';
import { benchmarksPage, missedTargets, readBenchmarksPage, writeBenchmarksPage } from './docs.ts';
import { mergeBenchmarksPage } from './docs-merge.ts';
import { options, type Section } from './options.ts';
import { findPostgres, probePostgres } from './postgres.ts';
import { section, table, writeJson } from './report.ts';
import { sqliteFactory } from './scenarios/processing.ts';
import { anchorsSection } from './sections/anchors.ts';
import { consoleSection } from './sections/console.ts';
import { enqueueSection } from './sections/enqueue.ts';
import { growthSection } from './sections/growth.ts';
import { orderingSection } from './sections/ordering.ts';
import { overheadSection } from './sections/overhead.ts';
import { processingSection } from './sections/processing.ts';
import { referenceTargetsSection } from './sections/reference-targets.ts';
import { scaleSection } from './sections/scale.ts';
import { serviceSection } from './sections/service.ts';
import { soakSection } from './sections/soak.ts';
import { startupSection } from './sections/startup.ts';
import { statusSection } from './sections/status.ts';
import { streamsSection } from './sections/streams.ts';
import { webhooksSection } from './sections/webhooks.ts';
import { removeScratch, scratchDir } from './util.ts';

const ROOT = join(import.meta.dir, '..', '..', '..');

function log(text: string): void {
  process.stderr.write(`${text}\n`);
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
  // Sections that measure PostgreSQL too.
  if (
    ['pg', 'service', 'console', 'anchors', 'streams', 'scale', 'ordering', 'growth', 'soak'].some(
      (s) => opts.only.has(s as Section),
    )
  ) {
    pg = await findPostgres(opts.pgUrl, scratch);
    if (pg.url === null) pgSkip = pg.note;
    else pgSkip = await probePostgres(pg.url);
    if (pgSkip !== null) log(`PostgreSQL skipped: ${pgSkip}`);
    else log(`PostgreSQL: ${pg.note}`);
  }
  const pgUrl = pgSkip === null ? (pg?.url ?? null) : null;

  const ctx: SectionContext = { opts, scratch, sqlite, pgUrl, pgSkip, out, targets, results, log };
  try {
    // Each section runs only when --only (or --anchors) names it.
    for (const run of [
      enqueueSection,
      processingSection,
      statusSection,
      serviceSection,
      streamsSection,
      consoleSection,
      startupSection,
      overheadSection,
      scaleSection,
      webhooksSection,
      orderingSection,
      growthSection,
      soakSection,
      anchorsSection,
    ])
      await run(ctx);
  } finally {
    await pg?.stop();
    removeScratch(scratch);
  }

  referenceTargetsSection(ctx);
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
  if (opts.writeDocs) {
    const facts = {
      command: ['bun run bench', ...commandArgs(Bun.argv.slice(2))].join(' '),
      machine: `${meta.cpus} × ${meta.cpuModel}, ${meta.platform}, bun ${meta.bun}`,
      date: meta.started.slice(0, 10),
    };
    const page = benchmarksPage(facts, out, missedTargets(targets, results));
    // A run of named sections rewrites just those on the page there is.
    const existing = opts.sectionsNamed ? readBenchmarksPage(ROOT) : null;
    const provenance = `Measured by \`${facts.command}\` (${facts.machine}, ${facts.date}), not by the run named at the top.`;
    const written = existing === null ? page : mergeBenchmarksPage(existing, page, provenance);
    log(`wrote ${writeBenchmarksPage(ROOT, written)}`);
  }
  out.push(
    `\nsystem load (1, 5, 15 min) at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )} (${meta.cpus} cpus); took ${Math.round((Date.now() - started.getTime()) / 1000)} s`,
  );
  out.push(`results: ${path}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The flags as a reader can repeat them: a PostgreSQL URL is the reader's own. */
function commandArgs(args: readonly string[]): string[] {
  return args.map((arg, i) =>
    args[i - 1] === '--pg' ? '$DATABASE_URL' : arg.replace(/^--pg=.*/, '--pg=$DATABASE_URL'),
  );
}

await main();
