/**
 * The PostgreSQL storm of tests/storms/storm-postgres.test.ts: `onceq enqueue` and several
 * `onceq work` loops against one database while a disruptor terminates their backends
 * (`pg_terminate_backend`) or restarts the server (`pg_ctl restart -m immediate`).
 * Every run must keep the CLI's error contract; afterwards a calm drain must reach
 * exactly one effect per event and the expected totals.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQL } from 'bun';
import {
  contractBreach,
  expectedTotals,
  runOnceqRun,
  STORM_NOW,
  StormActivity,
  type StormRun,
  traceLines,
  writeBatchFiles,
} from './storm.ts';

/** What one storm did and saw. */
export interface StormReport {
  runs: StormRun[];
  breaches: string[];
  /** Stack-trace or code-frame lines over all runs. */
  traceLines: number;
  /** Runs that ended with exit 1 and one `onceq:` sentence (the disruption showed). */
  refused: number;
  /** Disruptions that landed (a call of `disrupt` that disrupted something). */
  landed: number;
  /** What they did in all (backends terminated, restarts). */
  disruptions: number;
}

export interface StormPlan {
  url: string;
  events: number;
  perFile: number;
  workers: number;
  /** `work` runs per worker loop once the disruptions have landed (at most). */
  runsPerWorker: number;
  /**
   * How many disruptions must land: the loops keep running (bounded by
   * {@link MAX_STORM_RUNS} each) until they have, so a fast machine cannot finish the
   * storm before the first one.
   */
  disruptions: number;
  /** Called while runs are in flight; returns what it disrupted (0: nothing, try again). */
  disrupt: () => Promise<number>;
  /** Up to this many ms after a run is in flight before disrupting (varies the moment). */
  jitterMs: number;
  random: () => number;
}

/** The most runs one loop of a storm makes, whatever happens. */
export const MAX_STORM_RUNS = 200;
/** The most calls of `disrupt` one storm makes. */
const MAX_DISRUPT_CALLS = 400;

/** Runs the storm, then the calm drain. Never throws on a contract breach: it reports. */
export async function pgStorm(plan: StormPlan): Promise<StormReport> {
  const cwd = mkdtempSync(join(tmpdir(), 'onceq-storm-'));
  try {
    const files = writeBatchFiles(join(cwd, 'in'), plan.events, plan.perFile);
    const db = ['--db', plan.url];
    const at = (seconds: number) => ['--now', String(seconds)];
    const runs: StormRun[] = [];
    const activity = new StormActivity();
    const run = async (args: string[]) => {
      const done = await activity.run(args, cwd);
      runs.push(done);
      return done;
    };
    // The schema exists before the storm: concurrent first opens are another test's topic.
    // (`work` on the empty database creates it; a read-only `status` would refuse.)
    const first = await runOnceqRun(['work', ...db, ...at(STORM_NOW)], cwd);
    if (first.code !== 0) throw new Error(`work before the storm failed:\n${first.stderr}`);

    let storming = true;
    let enqueueing = true;
    const enqueueLoop = async () => {
      // Each file twice (the second run is all duplicates), then duplicates again while
      // the disruptions are still to land.
      for (const file of [...files, ...files])
        await run(['enqueue', file, ...db, ...at(STORM_NOW)]);
      for (let i = 0; storming && i < MAX_STORM_RUNS; i++) {
        await run(['enqueue', files[i % files.length] as string, ...db, ...at(STORM_NOW)]);
      }
      enqueueing = false;
    };
    const workerLoop = async () => {
      for (let i = 0; i < MAX_STORM_RUNS && (storming || i < plan.runsPerWorker); i++) {
        const done = await run([
          'work',
          ...db,
          ...at(STORM_NOW),
          '--batch',
          '5',
          '--max',
          '20',
          '--lease',
          '30',
        ]);
        if (!storming && !enqueueing && done.code === 0 && done.stdout.includes('nothing to claim'))
          return;
      }
    };
    let landed = 0;
    let disruptions = 0;
    const disruptor = async () => {
      // Each shot waits for a run in flight, and after a landed one for a run to end
      // first: the storm moves on between two disruptions.
      let endedAtLast = -1;
      for (let calls = 0; landed < plan.disruptions && calls < MAX_DISRUPT_CALLS; calls++) {
        const ready = await activity.until(
          () => activity.inFlight > 0 && activity.ended > endedAtLast,
        );
        if (!ready) break;
        await Bun.sleep(plan.random() * plan.jitterMs);
        const did = await plan.disrupt();
        if (did > 0) {
          landed++;
          disruptions += did;
          endedAtLast = activity.ended;
        } else {
          // Nothing to disrupt yet (the runs in flight have not connected): next event.
          const seen = activity.events;
          await activity.until(() => activity.events !== seen, 1000);
        }
      }
      storming = false;
    };
    await Promise.all([
      disruptor(),
      enqueueLoop(),
      ...Array.from({ length: plan.workers }, workerLoop),
    ]);

    // The calm after the storm: every line again (duplicates only), then a drain after
    // every lease of the storm expired, a redrive of anything dead, and a final drain.
    const stormRuns = [...runs];
    const after: StormRun[] = [];
    for (const file of files)
      after.push(await waitForServer(['enqueue', file, ...db, ...at(STORM_NOW + 100)], cwd));
    after.push(await runOnceqRun(['work', ...db, ...at(STORM_NOW + 100)], cwd));
    after.push(await runOnceqRun(['redrive', '--all', ...db, ...at(STORM_NOW + 200)], cwd));
    after.push(await runOnceqRun(['work', ...db, ...at(STORM_NOW + 200)], cwd));
    for (const run of after) {
      if (run.code !== 0)
        throw new Error(`calm run failed: onceq ${run.args.join(' ')}\n${run.stderr}`);
    }
    const breaches = stormRuns.map(contractBreach).filter((b): b is string => b !== undefined);
    return {
      runs: stormRuns,
      breaches,
      traceLines: stormRuns.reduce((sum, r) => sum + traceLines(r.stderr), 0),
      refused: stormRuns.filter((r) => r.code === 1).length,
      landed,
      disruptions,
    };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** The first run after a restart may still meet a server that is starting: retry a few times. */
async function waitForServer(args: string[], cwd: string): Promise<StormRun> {
  let run = await runOnceqRun(args, cwd);
  for (let i = 0; i < 30 && run.code === 1; i++) {
    await Bun.sleep(500);
    run = await runOnceqRun(args, cwd);
  }
  return run;
}

/** What the database holds after the drain, read with plain SQL (not through onceq). */
export interface StoreFacts {
  states: Record<string, number>;
  effects: number;
  doubled: number;
  total: number;
  totals: Record<string, number>;
  /** Events of the input that have no message or no effect. */
  missing: number;
}

export async function storeFacts(url: string, events: number): Promise<StoreFacts> {
  const sql = new SQL(url);
  try {
    const states: Record<string, number> = {};
    for (const r of await sql.unsafe(
      'SELECT state, count(*)::int AS n FROM onceq.messages GROUP BY state',
    )) {
      states[r.state as string] = r.n as number;
    }
    const [e] = await sql.unsafe(
      'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d, coalesce(sum(amount_cents),0)::bigint AS t FROM onceq.effects',
    );
    const totals: Record<string, number> = {};
    for (const r of await sql.unsafe(
      'SELECT category, sum(amount_cents)::bigint AS t FROM onceq.effects GROUP BY category',
    )) {
      totals[r.category as string] = Number(r.t);
    }
    const [m] = await sql.unsafe(
      `SELECT count(*)::int AS n FROM generate_series(1, ${events}) g
       WHERE NOT EXISTS (SELECT 1 FROM onceq.effects f WHERE f.event_id = 'E' || lpad(g::text, 4, '0'))`,
    );
    return {
      states,
      effects: e.n as number,
      doubled: (e.n as number) - (e.d as number),
      total: Number(e.t),
      totals,
      missing: m.n as number,
    };
  } finally {
    await sql.close();
  }
}

/** What a calm drain of `events` storm events must reach. */
export function expectedFacts(events: number): StoreFacts {
  const { totals, total } = expectedTotals(events);
  return { states: { done: events }, effects: events, doubled: 0, total, totals, missing: 0 };
}

/** A throwaway database on the cluster behind `adminUrl`, dropped by `drop()`. */
export async function freshDatabase(
  adminUrl: string,
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `storm_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new SQL(adminUrl);
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    // Commits are flushed before they are acknowledged in this database, whatever the
    // test cluster's speed settings: an immediate restart must not forget a commit
    // the CLI already reported.
    await admin.unsafe(`ALTER DATABASE ${name} SET synchronous_commit = on`);
  } finally {
    await admin.close();
  }
  const parsed = new URL(adminUrl);
  parsed.pathname = `/${name}`;
  return {
    url: parsed.toString(),
    name,
    drop: async () => {
      const again = new SQL(adminUrl);
      try {
        await again.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.close();
      }
    },
  };
}

/**
 * Terminates every onceq backend of database `name` (`which = 'all'`: every client
 * backend, a pooler's server connections too); resolves to how many.
 */
export async function terminateBackends(
  adminUrl: string,
  name: string,
  which: 'onceq' | 'all' = 'onceq',
): Promise<number> {
  const admin = new SQL(adminUrl);
  try {
    const rows = await admin.unsafe(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
       WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
         AND (application_name = 'onceq' OR $2)`,
      [name, which === 'all'],
    );
    return rows.filter((r: { ok: boolean }) => r.ok).length;
  } finally {
    await admin.close();
  }
}

/** The state file of a cluster started by scripts/pg-cluster.sh, parsed. */
export function clusterState(stateFile: string): { dir: string; port: string; bindir: string } {
  const text = readFileSync(stateFile, 'utf8');
  const get = (key: string) => {
    const m = new RegExp(`^${key}=(.*)$`, 'm').exec(text);
    if (!m?.[1]) throw new Error(`${stateFile}: no ${key}`);
    // printf %q quoting: plain paths come out unquoted.
    return m[1].replace(/^'(.*)'$/, '$1');
  };
  return { dir: get('PGC_DIR'), port: get('PGC_PORT'), bindir: get('PGC_BINDIR') };
}
