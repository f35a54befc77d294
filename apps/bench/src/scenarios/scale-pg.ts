/**
 * The scale figure: N worker processes on one PostgreSQL, directly and through PgBouncer
 * in transaction mode (scripts/pgbouncer.sh, loopback). Each run drains a fresh, analyzed
 * schema of `messages` messages with `work --batch 50`-like children behind a start
 * barrier: every child has opened the store and drained {@link SCALE_WARM_UP} messages of
 * its own first, so the window (the release to the last child's end) is steady-state
 * work of warm processes. Meanwhile the server's client connections of the database are
 * sampled for their peak; the store is checked for exactness afterwards (every message
 * done once, one effect each). The store is filled and checked on the server directly,
 * the children connect through the pooler in its mode.
 */
import { join } from 'node:path';
import { enqueue, openStore } from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import pg from 'pg';
import { dropSchema, rawQuery } from '../raw-db.ts';
import { batches } from '../util.ts';
import { ownRowsTable } from '../worker-child.ts';
import { runProcessing, type StoreFactory } from './processing.ts';

const ROOT = join(import.meta.dir, '..', '..', '..', '..');

export type ScaleMode = 'direct' | 'pgbouncer-transaction';

export interface ScaleRow {
  mode: ScaleMode;
  workers: number;
  messages: number;
  /** Messages per second, barrier to the last worker's end. */
  rate: number;
  /** Most client connections the server held for the database during the run. */
  peakConnections: number;
  exact: boolean;
  errors: string[];
  /** `?pool_max=` given to the workers (to stay within the server's slots), or null. */
  poolMax: number | null;
}

/** A loopback PgBouncer in transaction mode in front of `url`'s server, or why not. */
export function startPooler(
  url: string,
  scratch: string,
): { url: string; stop: () => void } | { skip: string } {
  const script = join(ROOT, 'scripts', 'pgbouncer.sh');
  const env = { ...process.env, ONCEQ_PGBOUNCER_STATE: join(scratch, 'pgbouncer.state') };
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
  return { url: started.stdout.toString().trim(), stop };
}

/** Samples the server's client connections to `url`'s database every 20 ms until stopped. */
function samplePeak(url: string): { stop: () => Promise<number> } {
  const client = new pg.Client({ connectionString: url, application_name: 'onceq-bench-sampler' });
  let peak = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid()`,
      );
      peak = Math.max(peak, rows[0]?.n ?? 0);
      await Bun.sleep(20);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.end().catch(() => {});
      return peak;
    },
  };
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
 * Messages each worker process drains before the window opens: three batches, so each of
 * its two pooled connections has prepared and planned the claim and the ACK, and the JIT
 * has compiled the hot path (one batch left the window paying for both: 32 processes
 * then spent twice the CPU per message of 8).
 */
export const SCALE_WARM_UP = 150;

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
  poolerUrl: string | null,
  workerCounts: readonly number[],
  messages: number,
  log: (line: string) => void,
): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const modes: [ScaleMode, string][] = [['direct', directUrl]];
  if (poolerUrl !== null) modes.push(['pgbouncer-transaction', poolerUrl]);
  const slots = await userSlots(directUrl);
  for (const [mode, url] of modes) {
    for (const workers of workerCounts) {
      const poolMax = poolMaxFor(mode, workers, slots);
      log(
        `scale: ${workers} worker process(es), ${mode}${poolMax === null ? '' : `, pool_max=${poolMax}`} …`,
      );
      const sampler = samplePeak(directUrl);
      // Stopped whatever the run does: a sampler left running keeps the bench alive.
      let run: Awaited<ReturnType<typeof runProcessing>>;
      let peakConnections: number;
      try {
        run = await runProcessing(scaleFactory(directUrl), {
          backend: 'pg',
          impl: 'core',
          effect: 'money',
          workers,
          batch: 50,
          messages,
          synchronous: 'FULL',
          warmUp: SCALE_WARM_UP,
          workerTarget: withPoolMax(url, poolMax),
        });
      } finally {
        peakConnections = await sampler.stop();
      }
      rows.push({
        mode,
        workers,
        messages,
        rate: run.rate,
        peakConnections,
        exact: run.verified,
        errors: run.errors,
        poolMax,
      });
    }
  }
  return rows;
}
