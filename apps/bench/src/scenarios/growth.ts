/**
 * Growth: the same work on a store that already holds many done events.
 *
 * For each backend (SQLite synchronous FULL, PostgreSQL), each kind of id (random
 * UUIDv4, time-ordered UUIDv7) and each size (default 0, 1,000,000 and 10,000,000
 * stored events), a fresh `general` store is filled with `size` done events with their
 * effects by direct inserts of the real row shape (SQLite: one prepared INSERT in
 * transactions of 50,000 rows; PostgreSQL: `INSERT … SELECT` from `generate_series`, a
 * million rows a statement, then `VACUUM ANALYZE` as autovacuum would have done), in
 * id order. Then two windows of `window` new events each: enqueued through the public
 * `enqueue` in 1000-line batches (timed), then worked by 1 (first window) or 2
 * (second) real worker processes running `work(store, v1, { batch: 100 })` until
 * nothing is left. Each window reports enqueue lines/s, work msg/s, the claim-to-ACK
 * latency (p50, p99), the workers' CPU per message, on PostgreSQL the server's CPU per
 * message (every server process, read from /proc), the bytes written and read per event
 * by the enqueue and per message by the work (SQLite: what the processes handed to write
 * calls, WAL frames and checkpoints, and read with read calls, the pages missing from
 * SQLite's cache; PostgreSQL: the server's WAL, and what its processes read into shared
 * buffers), and the bytes per stored event (SQLite: the file plus its WAL; PostgreSQL:
 * onceq's tables with their indexes and TOAST). Every window ends checked: the workers
 * did exactly the window's events and the store holds every event done, nothing ready,
 * leased or dead.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, openStore, type Store, status } from '@onceq/core';
import { storageUse } from '@onceq/core/admin';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { sql } from 'kysely';
import { type IdKind, idSource, uuid7At } from '../ids.ts';
import { dropSchema, walBytesSince, walPosition, withPostgres } from '../raw-db.ts';
import {
  runChildrenMetered,
  serverCpuReader,
  serverCpuUsPer,
  serverReadReader,
} from '../server-meter.ts';
import { ioBytes, ioSince, per, percentile, removeDb } from '../util.ts';
import type { ChildSpec } from '../worker-child.ts';
import { type Backend, childBytes } from './processing.ts';
import { fillStore, jsonl } from './streams.ts';

export interface GrowthWindow {
  backend: Backend;
  ids: IdKind;
  /** Events the store held before the window: the prefill, plus the first window for the second. */
  storedBefore: number;
  /** The prefill size this window belongs to. */
  size: number;
  workers: number;
  enqueueRate: number;
  rate: number;
  p50Ms: number;
  p99Ms: number;
  workerCpuUsPerMessage: number;
  /** Null when the server is not a process of this machine. */
  serverCpuUsPerMessage: number | null;
  /** Bytes the enqueue wrote per event (null where not measurable). */
  enqueueWrittenPerEvent: number | null;
  /** Bytes the work wrote per message done (null where not measurable). */
  workWrittenPerMessage: number | null;
  /** Bytes the enqueue read per event (null where not measurable). */
  enqueueReadPerEvent: number | null;
  /** Bytes the work read per message done (null where not measurable). */
  workReadPerMessage: number | null;
  bytesPerEvent: number;
  verified: boolean;
  detail: string;
}

export interface GrowthOptions {
  sizes: readonly number[];
  window: number;
  ids: readonly IdKind[];
  scratch: string;
  pgUrl: string | null;
  log: (line: string) => void;
}

/** Where the prefill's events finished: two days ago, as a store's history would have. */
const PREFILL_AGE_SECONDS = 2 * 86_400;

/** UUIDv7 prefill ids start this long ago (1000 ids a millisecond), before any live id. */
const PREFILL_ID_AGE_MS = 30 * 86_400_000;

interface GrowthStore {
  /** The store as the bench process opened it (enqueue and checks). */
  store: Store;
  spec: Omit<ChildSpec, 'batch'>;
  /** The server whose WAL counts the writes (PostgreSQL); null on SQLite. */
  walUrl: string | null;
  bytes(): Promise<number>;
  dispose(): Promise<void>;
}

async function sqliteGrowthStore(
  scratch: string,
  size: number,
  ids: IdKind,
  log: (line: string) => void,
): Promise<GrowthStore> {
  const path = join(scratch, `growth-${ids}-${size}.db`);
  removeDb(path);
  await (await openStore(path, { idPolicy: GENERAL_POLICY })).close();
  if (size > 0) {
    const now = Math.floor(Date.now() / 1000);
    const startMs = Date.now() - PREFILL_ID_AGE_MS;
    const ms = fillStore(path, {
      done: size,
      ready: 0,
      leased: 0,
      dead: 0,
      finishedAt: now - PREFILL_AGE_SECONDS,
      now,
      ...(ids === 'uuid7' ? { id: (i: number) => uuid7At(startMs, i) } : {}),
    });
    log(`  sqlite ${ids}: filled ${size} done events in ${Math.round(ms / 1000)} s`);
  }
  const store = await openStore(path, { synchronous: 'FULL' });
  const fileBytes = (file: string) => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  return {
    store,
    spec: { impl: 'core', effect: 'money', target: path, synchronous: 'FULL' },
    walUrl: null,
    bytes: async () => fileBytes(path) + fileBytes(`${path}-wal`),
    dispose: async () => {
      await store.close();
      removeDb(path);
    },
  };
}

/** The SQL of the `i`-th of `total` prefill ids (`i` a bigint column), increasing with `i`. */
function pgIdExpression(ids: IdKind, total: number, startMs: number): string {
  // gen_random_uuid()'s text is xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx: its tail keeps
  // the version and variant digits of whichever form the head takes.
  if (ids === 'uuid4')
    return `lpad(to_hex((i * 4294967296) / ${total}), 8, '0') || substr(gen_random_uuid()::text, 9)`;
  const ms = `lpad(to_hex(${startMs}::bigint + i / 1000), 12, '0')`;
  return `substr(${ms}, 1, 8) || '-' || substr(${ms}, 9, 4) || '-7' || lpad(to_hex(i % 1000), 3, '0') || '-' || substr(gen_random_uuid()::text, 20)`;
}

async function pgGrowthStore(
  url: string,
  size: number,
  ids: IdKind,
  log: (line: string) => void,
): Promise<GrowthStore> {
  const schema = `onceq_bench_growth_${process.pid}_${ids}_${size}`;
  await dropSchema(url, schema);
  const store = await openStore(url, { schema, idPolicy: GENERAL_POLICY });
  if (size > 0) {
    const t0 = performance.now();
    const finished = Math.floor(Date.now() / 1000) - PREFILL_AGE_SECONDS;
    const id = pgIdExpression(ids, size, Date.now() - PREFILL_ID_AGE_MS);
    await withPostgres(url, schema, async (db) => {
      for (let from = 0; from < size; from += 1_000_000) {
        const to = Math.min(size, from + 1_000_000);
        await sql`
          WITH m AS (
            INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
              enqueued_at, updated_at)
            SELECT ${sql.raw(id)},
              format('{"amount_cents":%s,"category":"%s","note":"bench %s"}',
                1 + (i * 7919) % 99999, (ARRAY['book', 'pen', 'bag'])[i % 3 + 1], i),
              'done', 1, 1, ${finished}::bigint, ${finished}::bigint, ${finished}::bigint
            FROM generate_series(${from}::bigint, ${to - 1}::bigint) i
            RETURNING event_id, payload)
          INSERT INTO effects (event_id, category, amount_cents, created_at)
          SELECT event_id, (payload::jsonb)->>'category', ((payload::jsonb)->>'amount_cents')::int,
            ${finished}::bigint
          FROM m`.execute(db);
      }
      await sql`VACUUM ANALYZE messages`.execute(db);
      await sql`VACUUM ANALYZE effects`.execute(db);
    });
    log(
      `  postgres ${ids}: filled ${size} done events in ${Math.round((performance.now() - t0) / 1000)} s`,
    );
  }
  return {
    store,
    spec: { impl: 'core', effect: 'money', target: url, synchronous: 'FULL', schema },
    walUrl: url,
    bytes: async () => (await storageUse(store)).bytes,
    dispose: async () => {
      await store.close();
      await dropSchema(url, schema);
    },
  };
}

/** Bytes a phase read and wrote (null where not measurable). */
interface Io {
  read: number | null;
  written: number | null;
}

/** The readings of a PostgreSQL server's work, each null where it cannot be read. */
interface ServerReaders {
  cpu: (() => number) | null;
  read: (() => number) | null;
}

/**
 * Starts counting a phase's I/O: on PostgreSQL (`walUrl` given) the server's WAL and
 * what its processes read; on SQLite this process's own read and write calls. The
 * function returned reads the counts since the start.
 */
async function ioMeter(
  walUrl: string | null,
  server: ServerReaders | null,
): Promise<() => Promise<Io>> {
  if (walUrl !== null) {
    const lsn = await walPosition(walUrl);
    const read = server?.read ?? null;
    const readAt = read?.() ?? Number.NaN;
    return async () => ({
      written: await walBytesSince(walUrl, lsn),
      read: read === null ? null : read() - readAt,
    });
  }
  const at = ioBytes();
  return async () => ioSince(at) ?? { read: null, written: null };
}

/** One window on `g`: enqueue `window` new events, then `workers` processes work them all. */
async function runWindow(
  g: GrowthStore,
  opts: { window: number; workers: number; ids: IdKind; storedBefore: number },
  server: ServerReaders | null,
): Promise<Omit<GrowthWindow, 'backend' | 'ids' | 'size' | 'storedBefore' | 'workers'>> {
  const next = idSource(opts.ids);
  const input = jsonl(opts.window, next);
  let accepted = 0;
  const enqueueIo = await ioMeter(g.walUrl, server);
  const e0 = performance.now();
  for (const batch of input) accepted += (await enqueue(g.store, batch)).accepted;
  const enqueueMs = performance.now() - e0;
  const enqueued = await enqueueIo();
  // On SQLite the workers do the I/O, and each reports its own.
  const workIo = g.walUrl === null ? null : await ioMeter(g.walUrl, server);
  const { results, serverCpuMs } = await runChildrenMetered(
    Array.from({ length: opts.workers }, () => ({ ...g.spec, batch: 100 })),
    undefined,
    server?.cpu ?? null,
  );
  const start = Math.min(...results.map((r) => r.startMs));
  const end = Math.max(...results.map((r) => r.endMs));
  const done = results.reduce((n, r) => n + r.done, 0);
  const worked: Io =
    workIo === null
      ? { read: childBytes(results, 'readBytes'), written: childBytes(results, 'writtenBytes') }
      : await workIo();
  const latencies = results.flatMap((r) => r.latencies);
  const workerCpu = results.reduce((n, r) => n + (r.cpuMs ?? 0), 0);
  const errors = results.flatMap((r) => (r.error === null ? [] : [r.error]));
  const { messages } = await status(g.store);
  const stored = opts.storedBefore + opts.window;
  const verified =
    errors.length === 0 &&
    accepted === opts.window &&
    done === opts.window &&
    messages.done === stored &&
    messages.ready + messages.leased + messages.dead === 0;
  return {
    enqueueRate: (accepted / enqueueMs) * 1000,
    rate: (done / (end - start)) * 1000,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    workerCpuUsPerMessage: done === 0 ? Number.NaN : (workerCpu / done) * 1000,
    serverCpuUsPerMessage: serverCpuUsPer(serverCpuMs, done),
    enqueueWrittenPerEvent: per(enqueued.written, accepted),
    workWrittenPerMessage: per(worked.written, done),
    enqueueReadPerEvent: per(enqueued.read, accepted),
    workReadPerMessage: per(worked.read, done),
    bytesPerEvent: (await g.bytes()) / stored,
    verified,
    detail: `accepted ${accepted}, workers done ${done}, stored done ${messages.done} of ${stored}, ready ${messages.ready}, leased ${messages.leased}, dead ${messages.dead}${errors.length === 0 ? '' : `; ${errors.join('; ')}`}`,
  };
}

/** Every window of the growth figure, in the order run. */
export async function runGrowth(opts: GrowthOptions): Promise<GrowthWindow[]> {
  const { log } = opts;
  const out: GrowthWindow[] = [];
  const backends: Backend[] = opts.pgUrl === null ? ['sqlite'] : ['sqlite', 'pg'];
  const server: ServerReaders | null =
    opts.pgUrl === null
      ? null
      : { cpu: await serverCpuReader(opts.pgUrl), read: await serverReadReader(opts.pgUrl) };
  for (const backend of backends) {
    for (const ids of opts.ids) {
      for (const size of opts.sizes) {
        const g =
          backend === 'sqlite'
            ? await sqliteGrowthStore(opts.scratch, size, ids, log)
            : await pgGrowthStore(opts.pgUrl as string, size, ids, log);
        try {
          for (const workers of [1, 2]) {
            const storedBefore = size + (workers - 1) * opts.window;
            const w = await runWindow(
              g,
              { window: opts.window, workers, ids, storedBefore },
              backend === 'pg' ? server : null,
            );
            out.push({ backend, ids, size, storedBefore, workers, ...w });
            log(
              `  ${backend} ${ids} at ${storedBefore}, ${workers} worker(s): enqueue ${Math.round(w.enqueueRate)} lines/s, work ${Math.round(w.rate)} msg/s, p99 ${w.p99Ms.toFixed(1)} ms, written ${Math.round(w.enqueueWrittenPerEvent ?? Number.NaN)} + ${Math.round(w.workWrittenPerMessage ?? Number.NaN)} B/event, read ${Math.round(w.enqueueReadPerEvent ?? Number.NaN)} + ${Math.round(w.workReadPerMessage ?? Number.NaN)} B/event, ${Math.round(w.bytesPerEvent)} B/event${w.verified ? '' : ` NOT VERIFIED: ${w.detail}`}`,
            );
          }
        } finally {
          await g.dispose();
        }
      }
    }
  }
  return out;
}
