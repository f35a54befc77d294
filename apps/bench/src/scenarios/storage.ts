/**
 * What one event costs on disk, live and once pruned, structure by structure.
 *
 * A fresh `general` store takes `events` events through the real path (`enqueue` in
 * 1000-line batches, then `work(store, v1, { batch: 100 })`), so every row, index entry
 * and effect is what onceq writes. Measured three times: empty, with every event done
 * (live: payload kept), and after `prune` turned each into a tombstone (payload gone,
 * its SHA-256 and the prune time kept). Each figure is the growth over the empty store,
 * divided by the events, per structure:
 *
 * - SQLite: `dbstat` (every B-tree's pages, in bytes) after a checkpoint, the WAL folded
 *   back; prune's incremental vacuum has given the freed pages back to the file.
 * - PostgreSQL: `pg_relation_size` of each table, its TOAST and each index after
 *   `VACUUM FULL` (so dead row versions of the claim and ACK are not counted: the figure
 *   is what a compacted store holds per event, the floor of what a running one holds).
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { join } from 'node:path';
import { enqueue, openStore, type Store, work } from '@onceq/core';
import { prune } from '@onceq/core/admin';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { sql } from 'kysely';
import { type IdKind, idSource } from '../ids.ts';
import { dropSchema, withPostgres } from '../raw-db.ts';
import { removeDb } from '../util.ts';
import type { Backend } from './processing.ts';
import { jsonl } from './streams.ts';

/** Bytes by structure (a table, an index, a TOAST table). */
type Sizes = Record<string, number>;

export interface StorageFigure {
  backend: Backend;
  ids: IdKind;
  events: number;
  /** Bytes per event by structure, live and pruned; `total` sums them. */
  live: Sizes;
  pruned: Sizes;
}

/** The stores' clock: the wall clock, moved a day ahead before the prune, so every event finished a day ago. */
let aheadSeconds = 0;
const clock = () => Math.floor(Date.now() / 1000) + aheadSeconds;

function perEvent(after: Sizes, before: Sizes, events: number): Sizes {
  const out: Sizes = {};
  let total = 0;
  for (const [name, bytes] of Object.entries(after)) {
    const grown = bytes - (before[name] ?? 0);
    if (grown === 0) continue;
    out[name] = grown / events;
    total += grown;
  }
  out.total = total / events;
  return out;
}

function sqliteSizes(path: string): Sizes {
  const db = new BunDatabase(path);
  try {
    db.run('PRAGMA wal_checkpoint(TRUNCATE)');
    const rows = db
      .query<{ name: string; bytes: number }, []>(
        'SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name',
      )
      .all();
    const free = db.query<{ n: number }, []>('PRAGMA freelist_count').get();
    const page = db.query<{ n: number }, []>('PRAGMA page_size').get();
    const sizes: Sizes = Object.fromEntries(rows.map((r) => [r.name, r.bytes]));
    sizes['(free pages)'] =
      Number(Object.values(free ?? {})[0]) * Number(Object.values(page ?? {})[0]);
    return sizes;
  } finally {
    db.close();
  }
}

async function pgSizes(url: string, schema: string): Promise<Sizes> {
  return withPostgres(url, schema, async (db) => {
    await sql`VACUUM FULL messages`.execute(db);
    await sql`VACUUM FULL effects`.execute(db);
    const { rows } = await sql<{ name: string; bytes: string }>`
      SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'i')
      UNION ALL
      SELECT c.relname || ' TOAST', pg_total_relation_size(c.reltoastrelid)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${schema} AND c.relkind = 'r' AND c.reltoastrelid <> 0`.execute(db);
    return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
  });
}

/** Empty, live and pruned sizes of one store; `current` is the store open now. */
async function fillAndPrune(
  current: () => Store,
  events: number,
  ids: IdKind,
  measure: () => Promise<Sizes>,
): Promise<{ empty: Sizes; live: Sizes; pruned: Sizes }> {
  aheadSeconds = 0;
  const empty = await measure();
  for (const batch of jsonl(events, idSource(ids))) await enqueue(current(), batch);
  const summary = await work(current(), handlers.v1, { batch: 100 });
  if (summary.done !== events) throw new Error(`storage: worked ${summary.done} of ${events}`);
  const live = await measure();
  aheadSeconds = 86_400;
  const { done } = await prune(current(), { doneOlderThanSeconds: 3600, dutyCycle: 1 });
  if (done !== events) throw new Error(`storage: pruned ${done} of ${events}`);
  return { empty, live, pruned: await measure() };
}

export async function runStorage(opts: {
  events: number;
  ids: readonly IdKind[];
  scratch: string;
  pgUrl: string | null;
}): Promise<StorageFigure[]> {
  const out: StorageFigure[] = [];
  for (const ids of opts.ids) {
    const path = join(opts.scratch, `storage-${ids}.db`);
    removeDb(path);
    let store = await openStore(path, { idPolicy: GENERAL_POLICY, clock });
    try {
      // bun:sqlite is synchronous: the raw connection measures only while the store is closed.
      const measure = async () => {
        await store.close();
        const sizes = sqliteSizes(path);
        store = await openStore(path, { clock });
        return sizes;
      };
      const r = await fillAndPrune(() => store, opts.events, ids, measure);
      out.push({
        backend: 'sqlite',
        ids,
        events: opts.events,
        live: perEvent(r.live, r.empty, opts.events),
        pruned: perEvent(r.pruned, r.empty, opts.events),
      });
    } finally {
      await store.close();
      removeDb(path);
    }
    if (opts.pgUrl === null) continue;
    const url = opts.pgUrl;
    const schema = `onceq_bench_storage_${process.pid}_${ids}`;
    await dropSchema(url, schema);
    const pgStore = await openStore(url, { schema, idPolicy: GENERAL_POLICY, clock });
    try {
      const measure = () => pgSizes(url, schema);
      const r = await fillAndPrune(() => pgStore, opts.events, ids, measure);
      out.push({
        backend: 'pg',
        ids,
        events: opts.events,
        live: perEvent(r.live, r.empty, opts.events),
        pruned: perEvent(r.pruned, r.empty, opts.events),
      });
    } finally {
      await pgStore.close();
      await dropSchema(url, schema);
    }
  }
  return out;
}
