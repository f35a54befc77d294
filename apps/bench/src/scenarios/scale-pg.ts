/**
 * The scale figure: N worker processes on one PostgreSQL, directly and through PgBouncer
 * in transaction mode (scripts/pgbouncer.sh, loopback). Each run drains a fresh, analyzed
 * schema of `messages` messages with `work --batch 50`-like children behind a start
 * barrier: every child has opened the store and drained {@link SCALE_WARM_UP} messages of
 * its own first, so the window (the release to the last child's end) is steady-state
 * work of warm processes. Meanwhile the server's client connections of the database are
 * sampled for their peak and, when the server runs on this machine, its processes' CPU
 * time; the store is checked for exactness afterwards (every message done once, one
 * effect each). The store is filled and checked on the server directly,
 * the children connect through the pooler in its mode.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, openStore } from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import pg from 'pg';
import { dropSchema, rawQuery } from '../raw-db.ts';
import { batches, wallMs } from '../util.ts';
import { ownRowsTable } from '../worker-child.ts';
import { runProcessing, type StoreFactory } from './processing.ts';

const ROOT = join(import.meta.dir, '..', '..', '..', '..');

export type ScaleMode = 'direct' | 'pgbouncer-transaction';

export interface ScaleRow {
  mode: ScaleMode;
  workers: number;
  messages: number;
  /** Messages each worker drained before the window. */
  warmUp: number;
  /** Messages per second, barrier to the last worker's end. */
  rate: number;
  /** Most client connections the server held for the database during the run. */
  peakConnections: number;
  /** CPU ms of the worker processes in the window per 1000 messages. */
  workerCpuMsPer1000: number;
  /**
   * CPU ms of the server's processes (and the pooler's, through it) in the window per
   * 1000 messages; null: not on this machine.
   */
  serverCpuMsPer1000: number | null;
  /** Fewest and most messages one worker did in the window. */
  doneRange: [number, number];
  /** From the first worker's start of work after the release to the last one's, ms. */
  startSpreadMs: number;
  /** From the first worker's end to the last one's, ms: the tail of fewer workers. */
  endSpreadMs: number;
  exact: boolean;
  errors: string[];
  /** `?pool_max=` given to the workers (to stay within the server's slots), or null. */
  poolMax: number | null;
}

/** A running pooler: its URL, its process (for its CPU time, when readable), and its stop. */
export interface Pooler {
  url: string;
  pid: number | null;
  stop: () => void;
}

/** A loopback PgBouncer in transaction mode in front of `url`'s server, or why not. */
export function startPooler(url: string, scratch: string): Pooler | { skip: string } {
  const script = join(ROOT, 'scripts', 'pgbouncer.sh');
  const state = join(scratch, 'pgbouncer.state');
  const env = { ...process.env, ONCEQ_PGBOUNCER_STATE: state };
  const started = Bun.spawnSync(['bash', script, 'start', url, 'transaction'], {
    env,
    stderr: 'pipe',
  });
  const stop = () => {
    Bun.spawnSync(['bash', script, 'stop'], { env });
  };
  if (started.exitCode !== 0) {
    stop();
    return {
      skip: `pgbouncer.sh start failed (exit ${started.exitCode}): ${started.stderr.toString().trim().slice(-200)}`,
    };
  }
  return { url: started.stdout.toString().trim(), pid: poolerPid(state), stop };
}

/** The pid pgbouncer.sh's state file leads to (`PGB_DIR`/pgbouncer.pid), or null. */
function poolerPid(state: string): number | null {
  try {
    const dir = /^PGB_DIR=(.+)$/m.exec(readFileSync(state, 'utf8'))?.[1];
    if (dir === undefined) return null;
    const pid = Number(readFileSync(join(dir, 'pgbouncer.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** CPU ms (user + system) a local process has spent so far, or null when it is not readable. */
function processCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) in parentheses: utime is
    // the 14th field of the line, stime the 15th, both in clock ticks.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** `getconf CLK_TCK`: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

interface ServerSamples {
  peak: number;
  /** Per server process: its CPU ms at each sample time (wallMs), when readable. */
  cpu: Map<number, { at: number; ms: number }[]>;
}

/**
 * Samples the server's client connections to `url`'s database every 20 ms until stopped,
 * and, when the server runs on this machine, every server process's CPU time (backends,
 * the WAL writer, autovacuum) and the pooler's (`poolerPid`), so the window's server CPU
 * per message can be read off.
 */
function sampleServer(
  url: string,
  poolerPid: number | null,
): { stop: () => Promise<ServerSamples> } {
  const client = new pg.Client({ connectionString: url, application_name: 'onceq-bench-sampler' });
  const samples: ServerSamples = { peak: 0, cpu: new Map() };
  let running = true;
  let local = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ pid: number; client: boolean }>(
        `SELECT pid, datname = current_database() AND backend_type = 'client backend' AS client
         FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
      );
      samples.peak = Math.max(samples.peak, rows.filter((r) => r.client).length);
      const at = wallMs();
      const pids = rows.map((r) => r.pid);
      if (poolerPid !== null) pids.push(poolerPid);
      for (const pid of local ? pids : []) {
        const ms = processCpuMs(pid);
        if (ms === null) {
          // Not this machine's process (or already gone): a remote server has none at all.
          if (samples.cpu.size === 0) local = false;
          continue;
        }
        const series = samples.cpu.get(pid) ?? [];
        series.push({ at, ms });
        samples.cpu.set(pid, series);
      }
      await Bun.sleep(20);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.end().catch(() => {});
      return samples;
    },
  };
}

/**
 * The server's CPU ms between `startMs` and `endMs`: per process, its last sample up to
 * the end less its last sample before the start (0 for a process born in the window).
 * Null when the server's processes were not readable (a remote server).
 */
function serverCpuIn(samples: ServerSamples, startMs: number, endMs: number): number | null {
  if (samples.cpu.size === 0) return null;
  let total = 0;
  for (const series of samples.cpu.values()) {
    let before = 0;
    let last: number | null = null;
    for (const { at, ms } of series) {
      if (at <= startMs) before = ms;
      if (at <= endMs) last = ms;
    }
    if (last !== null) total += Math.max(0, last - before);
  }
  return total;
}

/** Connection slots a non-superuser has: `max_connections - superuser_reserved_connections`. */
async function userSlots(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, application_name: 'onceq-bench-sampler' });
  await client.connect();
  try {
    const { rows } = await client.query<{ slots: number }>(
      `SELECT current_setting('max_connections')::int
         - current_setting('superuser_reserved_connections')::int AS slots`,
    );
    return rows[0]?.slots ?? 97;
  } finally {
    await client.end();
  }
}

/**
 * The workers' `pool_max`: directly, each process holds up to 2 pooled connections (see
 * the connection budget in docs/postgres.md); where N × 2 would not fit the server's
 * slots (64 at the default 100, less the sampler and the store checks), 1, as an operator
 * running that many workers directly would set it. Null: the default.
 */
function poolMaxFor(mode: ScaleMode, workers: number, slots: number): number | null {
  return mode === 'direct' && workers * 2 > slots - 5 ? 1 : null;
}

function withPoolMax(url: string, poolMax: number | null): string {
  if (poolMax === null) return url;
  const out = new URL(url);
  out.searchParams.set('pool_max', String(poolMax));
  return out.toString();
}

/**
 * Messages each worker process drains before the window opens: twenty batches of 50.
 * JavaScriptCore compiles the hot path (node-postgres' protocol parser above all) in each
 * process for itself, over its first few thousand messages. With three batches the
 * window still held that compiling, once per process: 32 processes draining 250 messages
 * each spent 1.6-2× the worker CPU per message of 8 processes draining 1,000, on the
 * JIT thread and in code not yet optimized; warmed by 1,000, the two are within about a
 * tenth of each other. At most {@link SCALE_WARM_UP_TOTAL} in all, so 64 processes drain
 * 500 each: 64 warming up 1,000 each at once on a loaded 2-core machine made statements
 * wait over 10 s for the one pooled connection of `?pool_max=1`.
 */
export const SCALE_WARM_UP = 1000;

/** Warm-up messages of all processes together, at most: see {@link SCALE_WARM_UP}. */
export const SCALE_WARM_UP_TOTAL = 32_000;

/** Messages drained in the window: 500 per process at 32 (the start and the tail are a small share). */
export const SCALE_MESSAGES = 16_000;

/**
 * A fresh schema per run on the server itself (never through the pooler: the checks'
 * raw connections set their schema at connect), with the `general` id policy (the warm-up
 * messages take the store past the lesson's E9999), and analyzed, as a store that has
 * been running has statistics: a freshly bulk-loaded one has none until autovacuum's
 * first pass, and its plans scan every ready row per claim.
 */
function scaleFactory(directUrl: string): StoreFactory {
  let counter = 0;
  return {
    backend: 'pg',
    async prepare(messages) {
      const schema = `onceq_bench_scale_${process.pid}_${++counter}`;
      const store = await openStore(directUrl, { schema, idPolicy: GENERAL_POLICY });
      try {
        for (const batch of batches(messages)) await enqueue(store, batch);
      } finally {
        await store.close();
      }
      await rawQuery(
        directUrl,
        schema,
        `CREATE TABLE ${ownRowsTable(schema)} (event_id TEXT PRIMARY KEY, category TEXT NOT NULL, amount_cents INTEGER NOT NULL)`,
      );
      await rawQuery(directUrl, schema, 'ANALYZE messages');
      return { target: directUrl, schema };
    },
    async dispose(target, schema) {
      if (schema !== undefined) await dropSchema(target, schema);
    },
  };
}

export async function runScale(
  directUrl: string,
  pooler: Pooler | null,
  workerCounts: readonly number[],
  messages: number,
  /** Messages each of N workers drains before the window. */
  warmUpOf: (workers: number) => number,
  log: (line: string) => void,
): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const modes: [ScaleMode, string, number | null][] = [['direct', directUrl, null]];
  if (pooler !== null) modes.push(['pgbouncer-transaction', pooler.url, pooler.pid]);
  const slots = await userSlots(directUrl);
  for (const [mode, url, poolerPid] of modes) {
    for (const workers of workerCounts) {
      const poolMax = poolMaxFor(mode, workers, slots);
      log(
        `scale: ${workers} worker process(es), ${mode}${poolMax === null ? '' : `, pool_max=${poolMax}`} …`,
      );
      const sampler = sampleServer(directUrl, poolerPid);
      // Stopped whatever the run does: a sampler left running keeps the bench alive.
      let run: Awaited<ReturnType<typeof runProcessing>>;
      let server: ServerSamples;
      try {
        run = await runProcessing(scaleFactory(directUrl), {
          backend: 'pg',
          impl: 'core',
          effect: 'money',
          workers,
          batch: 50,
          messages,
          synchronous: 'FULL',
          warmUp: warmUpOf(workers),
          workerTarget: withPoolMax(url, poolMax),
        });
      } finally {
        server = await sampler.stop();
      }
      const windows = run.workerWindows;
      const starts = windows.map((w) => w.startMs);
      const ends = windows.map((w) => w.endMs);
      const dones = windows.map((w) => w.done);
      const [start, end] = [Math.min(...starts), Math.max(...ends)];
      const serverCpu = serverCpuIn(server, start, end);
      const per1000 = (ms: number) => (messages === 0 ? Number.NaN : (ms / messages) * 1000);
      rows.push({
        mode,
        workers,
        messages,
        warmUp: warmUpOf(workers),
        rate: run.rate,
        peakConnections: server.peak,
        workerCpuMsPer1000: per1000(windows.reduce((n, w) => n + w.cpuMs, 0)),
        serverCpuMsPer1000: serverCpu === null ? null : per1000(serverCpu),
        doneRange: [Math.min(...dones), Math.max(...dones)],
        startSpreadMs: Math.max(...starts) - start,
        endSpreadMs: end - Math.min(...ends),
        exact: run.verified,
        errors: run.errors,
        poolMax,
      });
    }
  }
  return rows;
}
