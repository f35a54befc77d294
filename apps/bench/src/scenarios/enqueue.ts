/**
 * Enqueue throughput: max-size batches (1000 JSONL lines, given as bytes like a file),
 * validation included (`enqueue` parses and validates the batch itself), into a fresh
 * store. Also times `parseBatch` alone, to split validation from the write, and on
 * SQLite the **floor** under the write: the same parsed rows inserted with plain
 * `bun:sqlite` into the same schema at the same `synchronous`, one transaction (one
 * COMMIT, one WAL fsync at FULL) per batch, with and without the status-counter row
 * trigger (migration 0004).
 */
import { Database } from 'bun:sqlite';
import type { ParsedBatch } from '@onceq/core';
import { enqueue, openStore } from '@onceq/core';
import { parseBatch } from '@onceq/core/internal';
import { batches, removeDb } from '../util.ts';
import type { StoreFactory } from './processing.ts';

export interface EnqueueRun {
  /** Lines accepted per second over all batches of the run (parse + validate + write). */
  rate: number;
  /** Median time of one 1000-line batch, ms. */
  batchMs: number;
  /** `parseBatch` alone, lines per second. */
  parseRate: number;
  /**
   * CPU (user + system) of enqueue per 1000 lines, and of parse + the bare insert on
   * SQLite (NaN on PostgreSQL): unlike the rates, it barely moves when other processes
   * load the machine (the fsync wait is not CPU).
   */
  cpuMsPer1000: number;
  floorCpuMsPer1000: number;
  /** SQLite: the bare insert of the parsed rows, lines per second (NaN on PostgreSQL). */
  bareRate: number;
  /** SQLite: the same without the `messages_count_insert` row trigger (NaN on PostgreSQL). */
  bareNoTriggerRate: number;
  accepted: number;
}

export async function runEnqueue(
  target:
    | { kind: 'sqlite'; path: string; synchronous: 'FULL' | 'NORMAL' }
    | { kind: 'pg'; factory: StoreFactory },
  messages: number,
): Promise<EnqueueRun> {
  const input = batches(messages);
  const parseStart = performance.now();
  const parseCpu = process.cpuUsage();
  const parsed = input.map((batch) => parseBatch(batch));
  const parseCpuMs = cpuMs(process.cpuUsage(parseCpu));
  const parseMs = performance.now() - parseStart;

  let dispose = async () => {};
  let store: Awaited<ReturnType<typeof openStore>>;
  if (target.kind === 'sqlite') {
    store = await openStore(target.path, { synchronous: target.synchronous });
  } else {
    const { target: url, schema } = await target.factory.prepare(0);
    store = await openStore(url, { schema: schema as string });
    dispose = () => target.factory.dispose(url, schema);
  }
  const times: number[] = [];
  let accepted = 0;
  let enqueueCpuMs = 0;
  try {
    for (const batch of input) {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const result = await enqueue(store, batch);
      enqueueCpuMs += cpuMs(process.cpuUsage(cpu0));
      times.push(performance.now() - t0);
      accepted += result.accepted;
    }
  } finally {
    await store.close();
    await dispose();
  }
  const total = times.reduce((a, b) => a + b, 0);
  const sorted = [...times].sort((a, b) => a - b);
  let bare = { rate: Number.NaN, cpuMs: Number.NaN };
  let bareNoTrigger = bare;
  if (target.kind === 'sqlite') {
    bare = await bareInsert(`${target.path}.bare`, target.synchronous, parsed, true);
    bareNoTrigger = await bareInsert(`${target.path}.bare`, target.synchronous, parsed, false);
  }
  return {
    rate: (messages / total) * 1000,
    batchMs: sorted[sorted.length >> 1] as number,
    parseRate: (messages / parseMs) * 1000,
    bareRate: bare.rate,
    bareNoTriggerRate: bareNoTrigger.rate,
    cpuMsPer1000: (enqueueCpuMs / messages) * 1000,
    floorCpuMsPer1000: ((parseCpuMs + bare.cpuMs) / messages) * 1000,
    accepted,
  };
}

/**
 * The write alone: a fresh store made by `openStore` (the same schema, indexes and
 * triggers), then plain `bun:sqlite` with the store's pragmas inserting the parsed rows
 * as enqueue does (`BEGIN IMMEDIATE`, multi-row INSERTs of 500 rows binding id and
 * payload, `COMMIT`), with no duplicate check, no id-policy read, no Kysely, no JS
 * layers. Lines per second over all batches, and the CPU it took.
 */
async function bareInsert(
  path: string,
  synchronous: 'FULL' | 'NORMAL',
  parsed: readonly ParsedBatch[],
  counterTrigger: boolean,
): Promise<{ rate: number; cpuMs: number }> {
  removeDb(path);
  await (await openStore(path, { synchronous })).close();
  const db = new Database(path, { readwrite: true, create: false });
  try {
    db.run('PRAGMA journal_mode = WAL');
    db.run(`PRAGMA synchronous = ${synchronous}`);
    db.run('PRAGMA foreign_keys = ON');
    if (!counterTrigger) db.run('DROP TRIGGER messages_count_insert');
    const insert = (rows: number) =>
      db.prepare(
        `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at, lease_until, enqueued_at, updated_at) VALUES ${Array.from(
          { length: rows },
          (_, i) =>
            `(?${2 * i + 1}, ?${2 * i + 2}, 'ready', 0, 0, ?${2 * rows + 1}, NULL, ?${2 * rows + 1}, ?${2 * rows + 1})`,
        ).join(', ')}`,
      );
    // Timed from the prepare on, as enqueue's first batch prepares its INSERT too.
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const full = insert(500);
    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const now = Math.floor(Date.now() / 1000);
    let lines = 0;
    for (const batch of parsed) {
      begin.run();
      const entries = batch.entries;
      for (let i = 0; i < entries.length; i += 500) {
        const rows = Math.min(500, entries.length - i);
        const statement = rows === 500 ? full : insert(rows);
        const values: (string | number)[] = new Array(2 * rows + 1);
        for (let k = 0; k < rows; k++) {
          const entry = entries[i + k] as { eventId: string; payload: string };
          values[2 * k] = entry.eventId;
          values[2 * k + 1] = entry.payload;
        }
        values[2 * rows] = now;
        statement.run(...values);
      }
      commit.run();
      lines += entries.length;
    }
    return {
      rate: (lines / (performance.now() - t0)) * 1000,
      cpuMs: cpuMs(process.cpuUsage(cpu0)),
    };
  } finally {
    db.close();
    removeDb(path);
  }
}

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}
