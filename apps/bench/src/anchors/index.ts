/**
 * `bun run bench --anchors`: onceq next to the queues people use today, in the same run,
 * on the same machine and the same PostgreSQL cluster, with the same payloads. Each
 * setting is repeated `runs` times round-robin (a noisy minute hurts every one a
 * little) and reported as median (min–max).
 *
 * Installs nothing: plainjob, graphile-worker and pg-boss are pinned dev dependencies of
 * this workspace. What each anchor writes per job differs from onceq (see ANCHORS).
 */
import { join } from 'node:path';
import { walBytesSince, walPosition } from '../raw-db.ts';
import { rateCell, table } from '../report.ts';
import {
  type ProcessingConfig,
  pgFactory,
  runProcessing,
  sqliteFactory,
} from '../scenarios/processing.ts';
import { runChildrenMetered, serverCpuReader, serverCpuUsPer } from '../server-meter.ts';
import { fmtRate, per, removeDb, type Spread, spread } from '../util.ts';
import type { AnchorSpec } from './specs.ts';
import { dropSchema, graphileStore, pgBossStore, plainjobStore } from './stores.ts';

const CHILD = join(import.meta.dir, 'child.ts');

export interface AnchorRow {
  key: string;
  label: string;
  backend: 'sqlite' | 'pg';
  workers: number;
  messages: number;
  rate: Spread;
  /** CPU µs per message of the worker processes, release to end. */
  workerCpuUs: Spread;
  /** CPU µs per message of the PostgreSQL server's processes; null for SQLite. */
  serverCpuUs: Spread | null;
  /** Bytes of WAL the PostgreSQL server wrote per message, release to end; null for SQLite. */
  walBytes: Spread | null;
  errors: string[];
  /** Every message processed once (anchors: their own count; onceq: its store checked). */
  verified: boolean;
}

/** What one run of a setting measured. */
interface RunResult {
  rate: number;
  workerCpuUs: number;
  serverCpuUs: number | null;
  walBytes: number | null;
  errors: string[];
  verified: boolean;
}

interface Setting {
  key: string;
  label: string;
  backend: 'sqlite' | 'pg';
  workers: number;
  messages: number;
  run: (round: number) => Promise<RunResult>;
}

function anchorRun(
  spec: Omit<AnchorSpec, 'target' | 'schema'>,
  workers: number,
  messages: number,
  serverCpu: (() => number) | null,
  prepare: (round: number) => Promise<{ target: string; schema: string; dispose(): Promise<void> }>,
) {
  return async (round: number): Promise<RunResult> => {
    const store = await prepare(round);
    try {
      // Every anchor but plainjob runs on the PostgreSQL server at `target`.
      const walAt = spec.impl === 'plainjob' ? null : await walPosition(store.target);
      const { results, serverCpuMs } = await runChildrenMetered(
        Array.from({ length: workers }, () => ({ ...spec, ...store })),
        CHILD,
        serverCpu,
      );
      const wal = walAt === null ? null : await walBytesSince(store.target, walAt);
      const start = Math.min(...results.map((r) => r.startMs));
      const end = Math.max(...results.map((r) => r.endMs));
      const done = results.reduce((n, r) => n + r.done, 0);
      const cpuMs = results.reduce((n, r) => n + (r.cpuMs ?? 0), 0);
      const errors = results.flatMap((r, i) => (r.error ? [`worker ${i + 1}: ${r.error}`] : []));
      return {
        rate: (done / (end - start)) * 1000,
        workerCpuUs: done === 0 ? Number.NaN : (cpuMs / done) * 1000,
        serverCpuUs: serverCpuUsPer(serverCpuMs, done),
        walBytes: per(wal, done),
        errors,
        verified: done === messages,
      };
    } finally {
      await store.dispose();
    }
  };
}

function coreRun(factory: ReturnType<typeof sqliteFactory>, config: ProcessingConfig) {
  return async (): Promise<RunResult> => {
    const run = await runProcessing(factory, config);
    return {
      rate: run.rate,
      workerCpuUs: run.cpuMsPer1000,
      serverCpuUs: run.serverCpuUsPerMessage,
      // On PostgreSQL what the run wrote is the server's WAL.
      walBytes: config.backend === 'pg' ? run.writtenBytesPerMessage : null,
      errors: run.errors,
      verified: run.verified,
    };
  };
}

/** The key of a graphile-worker setting, shared by the settings and the targets. */
export function graphileKey(workers: number, concurrency: number, localQueue: number): string {
  return `graphile/w${workers}/c${concurrency}/q${localQueue}`;
}

/** Every setting of the anchors section; PostgreSQL ones only when `pgUrl` is given. */
function settings(
  scratch: string,
  pgUrl: string | null,
  serverCpu: (() => number) | null,
  quick: boolean,
): Setting[] {
  const sqliteN = quick ? 2000 : 10_000;
  const pgBatchN = quick ? 1000 : 5000;
  const pgOneN = quick ? 500 : 2000;
  const sqlite = sqliteFactory(scratch);
  const out: Setting[] = [];
  for (const workers of [1, 2]) {
    for (const synchronous of ['FULL', 'NORMAL'] as const) {
      out.push({
        key: `onceq/sqlite/${synchronous}/w${workers}/b100`,
        label: `onceq, SQLite ${synchronous}, batch 100`,
        backend: 'sqlite',
        workers,
        messages: sqliteN,
        run: coreRun(sqlite, {
          backend: 'sqlite',
          impl: 'core',
          effect: 'money',
          synchronous,
          workers,
          batch: 100,
          messages: sqliteN,
        }),
      });
    }
    out.push({
      key: `plainjob/w${workers}`,
      label: 'plainjob (NORMAL, per job, no fence, no effect row)',
      backend: 'sqlite',
      workers,
      messages: sqliteN,
      run: anchorRun(
        { impl: 'plainjob', concurrency: 1, localQueue: 0, completionBatchDelay: -1, batch: 1 },
        workers,
        sqliteN,
        null,
        async (round) => {
          const target = await plainjobStore(scratch, sqliteN, round * 10 + workers);
          return { target, schema: '', dispose: async () => removeDb(target) };
        },
      ),
    });
  }
  if (pgUrl === null) return out;
  const pg = pgFactory(pgUrl);
  let schemas = 0;
  const schemaFor = (prefix: string) => `${prefix}_${process.pid}_${++schemas}`;
  for (const workers of [1, 2]) {
    for (const batch of [500, 100, 1]) {
      const messages = batch === 1 ? pgOneN : pgBatchN;
      out.push({
        key: `onceq/pg/w${workers}/b${batch}`,
        label: `onceq, PostgreSQL, batch ${batch}${batch === 1 ? ' (one message per transaction)' : ''}`,
        backend: 'pg',
        workers,
        messages,
        run: coreRun(pg, {
          backend: 'pg',
          impl: 'core',
          effect: 'money',
          synchronous: 'FULL',
          workers,
          batch,
          messages,
          serverCpu,
        }),
      });
    }
    // Batched: the configuration of graphile-worker's performance page; one at a time:
    // its defaults (see ANCHORS).
    for (const [concurrency, localQueue, completionBatchDelay, messages] of [
      [24, 500, 0, pgBatchN],
      [1, 0, -1, pgOneN],
    ] as const) {
      out.push({
        key: graphileKey(workers, concurrency, localQueue),
        label:
          localQueue > 0
            ? `graphile-worker, concurrency ${concurrency}, local queue ${localQueue}, completions batched`
            : `graphile-worker, concurrency ${concurrency}`,
        backend: 'pg',
        workers,
        messages,
        run: anchorRun(
          { impl: 'graphile', concurrency, localQueue, completionBatchDelay, batch: 1 },
          workers,
          messages,
          serverCpu,
          async () => {
            const schema = schemaFor('gw_bench');
            await graphileStore(pgUrl, schema, messages);
            return { target: pgUrl, schema, dispose: () => dropSchema(pgUrl, schema) };
          },
        ),
      });
    }
    out.push({
      key: `pgboss/w${workers}/b50`,
      label: 'pg-boss, batch 50, effect rows in the completing transaction',
      backend: 'pg',
      workers,
      messages: pgBatchN,
      run: anchorRun(
        { impl: 'pgboss', concurrency: 1, localQueue: 0, completionBatchDelay: -1, batch: 50 },
        workers,
        pgBatchN,
        serverCpu,
        async () => {
          const schema = schemaFor('pgboss_bench');
          await pgBossStore(pgUrl, schema, pgBatchN);
          return { target: pgUrl, schema, dispose: () => dropSchema(pgUrl, schema) };
        },
      ),
    });
  }
  return out;
}

export async function runAnchors(options: {
  scratch: string;
  pgUrl: string | null;
  runs: number;
  quick: boolean;
  /** Only the settings whose key is one of these or starts with one and a `/`; null = all. */
  keys: readonly string[] | null;
  log: (line: string) => void;
}): Promise<AnchorRow[]> {
  const { keys } = options;
  const serverCpu = options.pgUrl === null ? null : await serverCpuReader(options.pgUrl);
  const all = settings(options.scratch, options.pgUrl, serverCpu, options.quick).filter(
    (s) => keys === null || keys.some((k) => s.key === k || s.key.startsWith(`${k}/`)),
  );
  const rates = new Map<string, number[]>(all.map((s) => [s.key, []]));
  const workerCpu = new Map<string, number[]>(all.map((s) => [s.key, []]));
  const serverCpuUs = new Map<string, number[]>(all.map((s) => [s.key, []]));
  const walBytes = new Map<string, number[]>(all.map((s) => [s.key, []]));
  const errors = new Map<string, string[]>(all.map((s) => [s.key, []]));
  const verified = new Map<string, boolean>(all.map((s) => [s.key, true]));
  for (let round = 0; round < options.runs; round++) {
    for (const setting of all) {
      const r = await setting.run(round);
      rates.get(setting.key)?.push(r.rate);
      workerCpu.get(setting.key)?.push(r.workerCpuUs);
      if (r.serverCpuUs !== null) serverCpuUs.get(setting.key)?.push(r.serverCpuUs);
      if (r.walBytes !== null) walBytes.get(setting.key)?.push(r.walBytes);
      errors.get(setting.key)?.push(...r.errors);
      if (!r.verified) verified.set(setting.key, false);
      options.log(
        `  anchors ${round + 1}/${options.runs} ${setting.key.padEnd(28)} ${fmtRate(r.rate).padStart(7)} msg/s${r.errors.length ? `  ERRORS ${r.errors.join('; ')}` : ''}${r.verified ? '' : '  NOT VERIFIED'}`,
      );
    }
  }
  return all.map((s) => ({
    key: s.key,
    label: s.label,
    backend: s.backend,
    workers: s.workers,
    messages: s.messages,
    rate: spread(rates.get(s.key) ?? []),
    workerCpuUs: spread(workerCpu.get(s.key) ?? []),
    serverCpuUs: s.backend === 'pg' ? spread(serverCpuUs.get(s.key) ?? []) : null,
    walBytes: s.backend === 'pg' ? spread(walBytes.get(s.key) ?? []) : null,
    errors: errors.get(s.key) ?? [],
    verified: verified.get(s.key) ?? false,
  }));
}

/** A per-message figure's median ('–' when not measured). */
function medianCell(s: Spread | null): string {
  return s === null || s.n === 0 || !Number.isFinite(s.median) ? '–' : fmtRate(s.median);
}

export function anchorsTable(rows: readonly AnchorRow[]): string {
  return table(
    [
      'backend',
      'workers',
      'queue and settings',
      'messages',
      'msg/s median (min–max)',
      'worker CPU µs/msg',
      'server CPU µs/msg',
      'WAL B/msg',
      'errors',
      'all processed',
    ],
    rows.map((r) => [
      r.backend,
      String(r.workers),
      r.label,
      String(r.messages),
      rateCell(r.rate),
      medianCell(r.workerCpuUs),
      medianCell(r.serverCpuUs),
      medianCell(r.walBytes),
      String(r.errors.length),
      r.verified ? 'ok' : 'NO',
    ]),
  );
}
