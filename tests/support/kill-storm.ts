/**
 * The kill storm of tests/storms/storm-kill.test.ts: several real `onceq work` processes on one
 * store, SIGKILLed at random moments and preferably while leases are live, in three
 * phases of the model clock 31 s apart (so killed leases expire, are recovered, and a
 * message killed three times goes dead). Then a calm drain, a redrive of the DLQ and a
 * final drain: every event must end `done` with exactly one effect.
 */
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQL } from 'bun';
import { MAX_STORM_RUNS } from './pg-storm.ts';
import {
  contractBreach,
  runOnceqRun,
  STORM_NOW,
  StormActivity,
  type StormProcess,
  type StormRun,
  startOnceq,
  writeBatchFiles,
} from './storm.ts';

export interface KillStormPlan {
  /** `--db` value: a SQLite file or a PostgreSQL URL. */
  db: string;
  events: number;
  workers: number;
  runsPerWorker: number;
  /**
   * Runs that must end by SIGKILL: the loops keep going in the last phase (bounded)
   * until they have, so a fast machine cannot end the storm before the first kill.
   */
  kills: number;
  /** How many leases are live right now (read beside the workers, never through them). */
  liveLeases: () => Promise<number>;
  random: () => number;
  /** The batches to enqueue (JSONL text); default: the storm's own `events` events. */
  batches?: readonly string[];
  /** Extra flags for every `work` run, e.g. `['--handler', './my-handler.ts']`; default none. */
  workFlags?: readonly string[];
}

export interface KillStormReport {
  runs: StormRun[];
  /** Runs (work or claim) that really ended by SIGKILL. */
  killed: number;
  kills: number;
  /** Kills that hit while the store showed live leases. */
  killsAtLiveLeases: number;
  breaches: string[];
}

/** Three phases: the second and third start after every lease of the one before expired. */
const PHASES = [STORM_NOW, STORM_NOW + 31, STORM_NOW + 62];

export async function killStorm(plan: KillStormPlan): Promise<KillStormReport> {
  const cwd = mkdtempSync(join(tmpdir(), 'onceq-kill-storm-'));
  try {
    const db = ['--db', plan.db];
    const files =
      plan.batches === undefined
        ? writeBatchFiles(join(cwd, 'in'), plan.events, 100)
        : plan.batches.map((text, i) => {
            const file = join(cwd, `batch-${i}.jsonl`);
            writeFileSync(file, text);
            return file;
          });
    const workFlags = plan.workFlags ?? [];
    for (const file of files) {
      const run = await runOnceqRun(['enqueue', file, ...db, '--now', String(STORM_NOW)], cwd);
      if (run.code !== 0) throw new Error(`enqueue before the storm failed:\n${run.stderr}`);
    }
    const runs: StormRun[] = [];
    const activity = new StormActivity();
    /** Running processes and when each started. */
    const running = new Map<StormProcess, number>();
    const killedSoFar = () => runs.filter((r) => r.signal !== null).length;
    const workerLoop = async (worker: number) => {
      // The planned runs, then (bounded) more of the last phase until the kills have
      // landed: on a fast, quiet machine all planned runs can end before the first shot.
      for (
        let i = 0;
        i < plan.runsPerWorker || (killedSoFar() < plan.kills && i < MAX_STORM_RUNS);
        i++
      ) {
        const planned = Math.min(i, plan.runsPerWorker - 1);
        const phase = PHASES[Math.floor((planned * PHASES.length) / plan.runsPerWorker)] as number;
        // Now and then a `claim` whose process ends holding the lease: a holder that
        // vanished after its claim, whose lease must expire and be recovered.
        const args =
          (i + worker) % 3 === 2
            ? ['claim', ...db, '--now', String(phase)]
            : ['work', ...db, ...workFlags, '--now', String(phase), '--batch', '5', '--max', '15'];
        const proc = startOnceq(args, cwd);
        running.set(proc, performance.now());
        const run = await activity.track(proc);
        running.delete(proc);
        runs.push(run);
      }
    };
    let kills = 0;
    let killsAtLiveLeases = 0;
    let calm = false;
    const killer = async () => {
      // Each shot waits for a process in flight and for one run to end since the last
      // shot (the storm moves on between kills); the moment within a run varies.
      let endedAtLast = -1;
      while (!calm) {
        const ready = await activity.until(
          () => calm || (running.size > 0 && activity.ended > endedAtLast),
        );
        if (!ready || calm) break;
        // Spare about half the runs (seeded): some finish their work, some die mid-way.
        if (plan.random() < 0.5) {
          endedAtLast = activity.ended;
          continue;
        }
        await Bun.sleep(plan.random() * 600);
        if (calm || running.size === 0) continue;
        endedAtLast = activity.ended;
        // Prefer a moment with live leases: look for up to ~1.5 s before killing anyway.
        let live = await plan.liveLeases();
        for (let look = 0; look < 30 && live === 0 && !calm; look++) {
          await Bun.sleep(50);
          live = await plan.liveLeases();
        }
        // The longest-running process: past its start-up, most likely mid-work.
        const victim = [...running].sort((a, b) => a[1] - b[1])[0]?.[0];
        if (victim === undefined) continue;
        victim.kill('SIGKILL');
        kills++;
        if (live > 0) killsAtLiveLeases++;
      }
    };
    const loops = Promise.all(Array.from({ length: plan.workers }, (_, i) => workerLoop(i)));
    const killing = killer();
    await loops;
    calm = true;
    await killing;

    const late = STORM_NOW + 200;
    for (const args of [
      ['work', ...db, ...workFlags, '--now', String(late)],
      ['redrive', '--all', ...db, '--now', String(late + 1)],
      ['work', ...db, ...workFlags, '--now', String(late + 1)],
    ]) {
      const run = await runOnceqRun(args, cwd);
      if (run.code !== 0)
        throw new Error(`calm run failed: onceq ${args.join(' ')}\n${run.stderr}`);
    }
    const breaches = runs.map(contractBreach).filter((b): b is string => b !== undefined);
    const killed = runs.filter((r) => r.signal !== null).length;
    return { runs, killed, kills, killsAtLiveLeases, breaches };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** {@link KillStormPlan.liveLeases} for a SQLite file: a read-only connection beside the workers. */
export function sqliteLiveLeases(path: string): () => Promise<number> {
  return async () => {
    try {
      const db = new Database(path, { readonly: true });
      try {
        const row = db.query("SELECT count(*) AS n FROM messages WHERE state = 'leased'").get() as {
          n: number;
        };
        return row.n;
      } finally {
        db.close();
      }
    } catch {
      return 0;
    }
  };
}

/** {@link KillStormPlan.liveLeases} for a PostgreSQL database (onceq's schema `onceq`). */
export function postgresLiveLeases(url: string): () => Promise<number> {
  return async () => {
    const sql = new SQL(url);
    try {
      const [row] = await sql.unsafe(
        "SELECT count(*)::int AS n FROM onceq.messages WHERE state = 'leased'",
      );
      return row.n as number;
    } catch {
      return 0;
    } finally {
      await sql.close();
    }
  };
}
