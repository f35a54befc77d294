/**
 * The scale figure: N worker processes on one PostgreSQL, directly and through PgBouncer
 * in transaction mode (scripts/pgbouncer.sh, loopback). Each run drains a fresh schema of
 * `messages` messages with `work --batch 50`-like children behind a start barrier (each
 * warmed first by a batch of its own, so the window holds no process's first batch: the
 * JIT and the first statements), while
 * the server's client connections of the database are sampled for their peak; the store
 * is checked for exactness afterwards (every message done once, one effect each).
 */
import { join } from 'node:path';
import pg from 'pg';
import { pgFactory, runProcessing } from './processing.ts';

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
        run = await runProcessing(pgFactory(withPoolMax(url, poolMax)), {
          backend: 'pg',
          impl: 'core',
          effect: 'money',
          workers,
          batch: 50,
          messages,
          synchronous: 'FULL',
          warmUp: true,
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
