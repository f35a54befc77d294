/**
 * Stores for the anchor queues, filled with the same payloads as onceq's runs
 * (util.ts `line`), one fresh store per run, removed afterwards.
 */
import { Database } from 'bun:sqlite';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDb } from '../util.ts';

/** The payloads of util.ts `line(i)`, as objects. */
export function payloads(count: number): Record<string, unknown>[] {
  const categories = ['book', 'pen', 'bag'];
  return Array.from({ length: count }, (_, i) => ({
    category: categories[i % categories.length],
    amount_cents: 1 + ((i * 7919) % 99_999),
    note: `bench ${i}`,
  }));
}

const CHUNK = 1000;

/** plainjob: a template file with `count` pending jobs, copied per run. */
export async function plainjobStore(dir: string, count: number, run: number): Promise<string> {
  const template = join(dir, `plainjob-${count}.db`);
  if (!(await Bun.file(template).exists())) {
    const { bun, defineQueue } = await import('plainjob');
    const db = new Database(template, { strict: true });
    const queue = defineQueue({ connection: bun(db), maintenanceInterval: 3_600_000 });
    const all = payloads(count);
    for (let i = 0; i < count; i += CHUNK) queue.addMany('pay', all.slice(i, i + CHUNK));
    queue.close();
    db.close();
  }
  const target = join(dir, `plainjob-run-${run}.db`);
  removeDb(target);
  copyFileSync(template, target);
  return target;
}

/** graphile-worker: its schema migrated into `schema`, with `count` jobs. */
export async function graphileStore(url: string, schema: string, count: number): Promise<void> {
  const { runMigrations, makeWorkerUtils } = await import('graphile-worker');
  const { Logger } = await import('graphile-worker');
  const logger = new Logger(() => () => {});
  await runMigrations({ connectionString: url, schema, logger });
  const utils = await makeWorkerUtils({ connectionString: url, schema, logger });
  try {
    const all = payloads(count);
    for (let i = 0; i < count; i += CHUNK)
      await utils.addJobs(
        all.slice(i, i + CHUNK).map((payload) => ({ identifier: 'pay', payload })),
      );
  } finally {
    await utils.release();
  }
}

/** pg-boss: its schema in `schema`, a queue `pay` with `count` jobs, an effects table. */
export async function pgBossStore(url: string, schema: string, count: number): Promise<void> {
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  try {
    await boss.createQueue('pay');
    const all = payloads(count);
    for (let i = 0; i < count; i += CHUNK)
      await boss.insert(
        'pay',
        all.slice(i, i + CHUNK).map((data) => ({ data })),
      );
    const { Pool } = await import('pg');
    const pool = new Pool({ connectionString: url, max: 1 });
    await pool.query(
      `CREATE TABLE ${schema}.effects (id text PRIMARY KEY, category text NOT NULL, amount_cents integer NOT NULL)`,
    );
    await pool.end();
  } finally {
    await boss.stop({ graceful: false });
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const { Pool } = await import('pg');
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await pool.end();
  }
}
