/**
 * Processing throughput: claim → v1 handler → apply (effect + ACK), with 1 or 2 worker
 * processes on one store, core (`work()`) or the bare baseline; or core with a handler
 * that writes one row of its own per message (a completion) instead of the money
 * effect. Every run starts from the same store content (N ready messages, the own-row
 * table empty) and ends with a check that every message is done with exactly one
 * recorded outcome.
 */
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, openStore, status } from '@onceq/core';
import { dropSchema, rawQuery, walBytesSince, walPosition } from '../raw-db.ts';
import { runChildrenMetered, serverCpuUsPer } from '../server-meter.ts';
import { batches, per, percentile, removeDb } from '../util.ts';
import {
  type ChildResult,
  type ChildSpec,
  OWN_ROWS_TABLE,
  type OwnRowEffect,
  ownRowsTable,
} from '../worker-child.ts';

export type Backend = 'sqlite' | 'pg';

export interface ProcessingConfig {
  backend: Backend;
  impl: 'core' | 'bare';
  /**
   * What the handler records with each ACK (core only): the lesson's money effect, or
   * one row of its own in a table of its own, declared as a completion's `insert`
   * (`own-row`) or written by its `write(tx)` (`own-row-write`).
   */
  effect: OwnRowEffect;
  synchronous: 'FULL' | 'NORMAL';
  workers: number;
  batch: number;
  /** Messages in the store at the start of each run (all processed). */
  messages: number;
  /**
   * Messages each worker first drains in the same store (extra ones), before the start
   * barrier, so the window measures warm processes (statements prepared and planned on
   * each connection, the JIT warm), not each one's first batches. Default 0.
   */
  warmUp?: number;
  /**
   * Where the worker processes connect, when not where the store was prepared and is
   * checked (a pooler in front of the same server). Default: the store's target.
   */
  workerTarget?: string;
  /**
   * The reader of the server's CPU ms (server-cpu.ts), for a PostgreSQL server on this
   * machine: the run then reports the server's CPU per message. Default none.
   */
  serverCpu?: (() => number) | null;
}

export interface ProcessingRun {
  /** Messages done per second of wall time (first worker start → last worker end). */
  rate: number;
  wallMs: number;
  /** Share of the done messages per worker, 0..1. */
  shares: number[];
  /** Each worker's window (ms, one clock for all) and its messages done and CPU ms in it. */
  workerWindows: { startMs: number; endMs: number; done: number; cpuMs: number }[];
  p50Ms: number;
  p99Ms: number;
  busyRetries: number;
  /** CPU ms (user + system, all workers, barrier to end) per 1000 messages done. */
  cpuMsPer1000: number;
  /** The server's CPU µs per message done, release to end (null without a reader). */
  serverCpuUsPerMessage: number | null;
  /** Transactions per message (claim + apply, all workers). */
  txPerMessage: number;
  /**
   * Bytes written per message done (null where unknown): on SQLite what the workers
   * passed to write calls, on PostgreSQL the WAL the server wrote from the workers'
   * start to their end.
   */
  writtenBytesPerMessage: number | null;
  errors: string[];
  /** Every message done, one effect each, nothing else. */
  verified: boolean;
  verifyDetail: string;
}

export function configKey(c: ProcessingConfig): string {
  const impl = c.effect === 'money' ? c.impl : `${c.impl}-${c.effect}`;
  return `${c.backend}/${impl}/${c.backend === 'sqlite' ? c.synchronous : 'pg'}/w${c.workers}/b${c.batch}`;
}

/** Where one run's store lives and how it is prepared and cleaned up. */
export interface StoreFactory {
  backend: Backend;
  prepare(messages: number): Promise<{ target: string; schema?: string }>;
  dispose(target: string, schema?: string): Promise<void>;
}

/** The own-row handler's table, empty, in a freshly filled store. */
async function createOwnRowsTable(target: string, schema: string | undefined): Promise<void> {
  await rawQuery(
    target,
    schema,
    `CREATE TABLE ${ownRowsTable(schema)} (event_id TEXT PRIMARY KEY, category TEXT NOT NULL, amount_cents INTEGER NOT NULL)`,
  );
}

/** SQLite: a template file with N ready messages, copied for each run. */
export function sqliteFactory(dir: string): StoreFactory {
  const templates = new Map<number, string>();
  let counter = 0;
  return {
    backend: 'sqlite',
    async prepare(messages) {
      let template = templates.get(messages);
      if (template === undefined) {
        template = join(dir, `template-${messages}.db`);
        removeDb(template);
        const store = await openStore(template, { synchronous: 'NORMAL' });
        for (const batch of batches(messages)) await enqueue(store, batch);
        await createOwnRowsTable(template, undefined);
        await store.close();
        if (existsSync(`${template}-wal`)) throw new Error('template store left a -wal file');
        templates.set(messages, template);
      }
      const target = join(dir, `run-${++counter}.db`);
      removeDb(target);
      copyFileSync(template, target);
      return { target };
    },
    async dispose(target) {
      removeDb(target);
    },
  };
}

/** PostgreSQL: a fresh schema per run, filled through core, dropped afterwards. */
export function pgFactory(url: string): StoreFactory {
  let counter = 0;
  return {
    backend: 'pg',
    async prepare(messages) {
      const schema = `onceq_bench_${process.pid}_${++counter}`;
      const store = await openStore(url, { schema });
      try {
        for (const batch of batches(messages)) await enqueue(store, batch);
        await createOwnRowsTable(url, schema);
      } finally {
        await store.close();
      }
      return { target: url, schema };
    },
    async dispose(target, schema) {
      if (schema === undefined) return;
      await dropSchema(target, schema);
    },
  };
}

/** What the workers read or wrote in all, bytes: null unless every worker reported it. */
export function childBytes(
  results: readonly ChildResult[],
  field: 'readBytes' | 'writtenBytes',
): number | null {
  let total = 0;
  for (const r of results) {
    const bytes = r[field];
    if (bytes === undefined || bytes === null) return null;
    total += bytes;
  }
  return total;
}

export async function runProcessing(
  factory: StoreFactory,
  config: ProcessingConfig,
): Promise<ProcessingRun> {
  const messages = config.messages;
  const warmUp = config.warmUp ?? 0;
  const { target, schema } = await factory.prepare(messages + config.workers * warmUp);
  try {
    const spec: ChildSpec = {
      impl: config.impl,
      effect: config.effect,
      target: config.workerTarget ?? target,
      synchronous: config.synchronous,
      batch: config.batch,
      ...(schema === undefined ? {} : { schema }),
      ...(warmUp === 0 ? {} : { warmUp }),
    };
    const walAtStart = config.backend === 'pg' ? await walPosition(target) : null;
    const { results, serverCpuMs } = await runChildrenMetered(
      Array.from({ length: config.workers }, () => spec),
      undefined,
      config.serverCpu ?? null,
    );
    // On PostgreSQL what the run wrote is the server's WAL; on SQLite the workers' writes.
    const written =
      walAtStart === null
        ? childBytes(results, 'writtenBytes')
        : await walBytesSince(target, walAtStart);
    const start = Math.min(...results.map((r) => r.startMs));
    const end = Math.max(...results.map((r) => r.endMs));
    const done = results.reduce((n, r) => n + r.done, 0);
    const latencies = results.flatMap((r) => r.latencies);
    const transactions = results.reduce((n, r) => n + r.transactions, 0);
    const errors = results.flatMap((r, i) =>
      r.error === null ? [] : [`worker ${i + 1}: ${r.error}`],
    );
    const { verified, verifyDetail } = await verify(
      target,
      schema,
      config,
      config.workers * warmUp,
      results,
    );
    return {
      rate: (done / (end - start)) * 1000,
      wallMs: end - start,
      shares: results.map((r) => (done === 0 ? 0 : r.done / done)),
      workerWindows: results.map((r) => ({
        startMs: r.startMs,
        endMs: r.endMs,
        done: r.done,
        cpuMs: r.cpuMs ?? 0,
      })),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      busyRetries: results.reduce((n, r) => n + r.busyRetries, 0),
      cpuMsPer1000:
        done === 0 ? Number.NaN : (results.reduce((n, r) => n + (r.cpuMs ?? 0), 0) / done) * 1000,
      serverCpuUsPerMessage: serverCpuUsPer(serverCpuMs, done),
      txPerMessage: done === 0 ? Number.NaN : transactions / done,
      writtenBytesPerMessage: per(written, done),
      errors,
      verified,
      verifyDetail,
    };
  } finally {
    await factory.dispose(target, schema);
  }
}

/**
 * Every message done, each with exactly one recorded outcome of the run's kind: one money
 * effect, or one completion record and one own row (and no effect), nothing left over;
 * `messages` of them in the window, `warmed` before it.
 */
async function verify(
  target: string,
  schema: string | undefined,
  config: ProcessingConfig,
  warmed: number,
  results: readonly { done: number; lost: number; failed: number }[],
): Promise<{ verified: boolean; verifyDetail: string }> {
  const { messages } = config;
  const stored = messages + warmed;
  const store = await openStore(target, schema === undefined ? {} : { schema });
  try {
    const report = await status(store);
    const count = async (table: string) => {
      const rows = await rawQuery(target, schema, `SELECT COUNT(*) AS n FROM ${table}`);
      return Number(rows[0]?.n);
    };
    const completions = await count('completions');
    const ownRows = await count(ownRowsTable(schema));
    const done = results.reduce((n, r) => n + r.done, 0);
    const outcomes =
      config.effect === 'money'
        ? report.effects === stored && completions === 0 && ownRows === 0
        : report.effects === 0 && completions === stored && ownRows === stored;
    const ok =
      outcomes &&
      report.messages.done === stored &&
      report.messages.ready + report.messages.leased + report.messages.dead === 0 &&
      done === messages;
    return {
      verified: ok,
      verifyDetail: `${warmed} warm-up messages; stored done=${report.messages.done} effects=${report.effects} completions=${completions} ${OWN_ROWS_TABLE}=${ownRows} ready=${report.messages.ready} leased=${report.messages.leased} dead=${report.messages.dead}; workers reported done=${done}`,
    };
  } finally {
    await store.close();
  }
}
