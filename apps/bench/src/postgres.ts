/** Which PostgreSQL the benchmark measures: a given URL, or a throwaway cluster. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '@onceq/core';
import { dropSchema } from './raw-db.ts';
import { errorText } from './util.ts';

const ROOT = join(import.meta.dir, '..', '..', '..');

/** A PostgreSQL to use, and how to stop it: given, or a throwaway cluster. */
export async function findPostgres(
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
export async function probePostgres(url: string): Promise<string | null> {
  const schema = `onceq_bench_probe_${process.pid}`;
  try {
    const store = await openStore(url, { schema });
    await store.close();
    await dropSchema(url, schema);
    return null;
  } catch (error) {
    return errorText(error);
  }
}
