/**
 * Real event streams (SQLite, synchronous FULL):
 *
 * 1. Enqueue of 1000-line batches with 36-character ids on a `general` store vs the
 *    lesson's `E0000`–`E9999` on a `lesson` store (same payloads): target ≥ 0.9×. Two
 *    kinds of 36-character ids: random UUIDv4, and time-ordered ones (UUIDv7-like, as
 *    ULIDs, KSUIDs or offsets are): random keys land all over the primary-key and
 *    claim-index B-trees, so each commit writes many more pages.
 * 2. claim and `status` on a store of 1,000,000 messages with UUID ids (80 % done with
 *    effects, 10 % ready, 5 % leased, 5 % dead): targets < 10 ms and < 100 ms.
 * 3. prune of 100,000 old done messages while one real `onceq worker` process runs at
 *    full speed (batch 100): its rate during the prune vs alone just before and after,
 *    target < 20 % slower (see pruneUnderLoad).
 *
 * The same 1,000,000-message figures on PostgreSQL: scenarios/streams-pg.ts.
 *
 * Large stores are built with bun:sqlite directly (prepared INSERTs, 50,000 rows per
 * transaction) on the schema `openStore` created, not through the CLI: the rows are the
 * real store's shape, the ids real UUIDs, no CHECK bypassed. No ANALYZE is run: a real
 * store never runs it either.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { join } from 'node:path';
import { claim, enqueue, openStore, status } from '@onceq/core';
import { prune } from '@onceq/core/admin';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { sortedUuid4 } from '../ids.ts';
import { removeDb, type Spread, spread } from '../util.ts';

export interface StreamsResult {
  enqueue: {
    lessonRate: Spread;
    /** Random UUIDv4 ids. */
    generalRate: Spread;
    ratio: number;
    /** Time-ordered 36-character ids. */
    orderedRate: Spread;
    orderedRatio: number;
  };
  large: { messages: number; buildMs: number; claimMs: Spread; statusMs: Spread };
  prune: {
    pruned: number;
    pruneMs: number;
    baselineRate: number;
    duringRate: number;
    slowdown: number;
    readyForWorker: number;
    /** How long the worker still had messages while the prune ran, ms. */
    overlapMs: number;
    /** False when that overlap was under 3 s (too short a window to judge). */
    valid: boolean;
  };
}

const CATEGORIES = ['book', 'pen', 'bag'] as const;

export function payload(i: number): string {
  const category = CATEGORIES[i % 3];
  return `{"amount_cents":${1 + ((i * 7919) % 99_999)},"category":"${category}","note":"bench ${i}"}`;
}

/** 1000-line batches: `count` lines, ids from `id(i)`. */
export function jsonl(count: number, id: (i: number) => string): Uint8Array[] {
  const encoder = new TextEncoder();
  const out: Uint8Array[] = [];
  for (let start = 0; start < count; start += 1000) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      lines.push(`{"event_id":"${id(i)}","payload":${payload(i)}}`);
    }
    out.push(encoder.encode(`${lines.join('\n')}\n`));
  }
  return out;
}

async function enqueueRate(path: string, input: Uint8Array[], general: boolean): Promise<number> {
  removeDb(path);
  const store = await openStore(path, general ? { idPolicy: GENERAL_POLICY } : {});
  let lines = 0;
  const t0 = performance.now();
  try {
    for (const batch of input) lines += (await enqueue(store, batch)).accepted;
  } finally {
    await store.close();
  }
  const ms = performance.now() - t0;
  removeDb(path);
  return (lines / ms) * 1000;
}

export interface Fill {
  done: number;
  ready: number;
  leased: number;
  dead: number;
  /** `updated_at` of done/dead rows (their finish time). */
  finishedAt: number;
  now: number;
  /** The `i`-th of `total` ids, increasing with `i`. Default: UUIDv4 ({@link sortedUuid4}). */
  id?: (i: number, total: number) => string;
}

/** Adds rows with UUID ids to an existing (migrated, general) store file; returns ms taken. */
export function fillStore(path: string, fill: Fill): number {
  const t0 = performance.now();
  const raw = new BunDatabase(path);
  raw.run('PRAGMA journal_mode = WAL');
  raw.run('PRAGMA synchronous = NORMAL');
  const message = raw.prepare(
    `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, enqueued_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const effect = raw.prepare(
    'INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES (?, ?, ?, ?)',
  );
  const plan: [string, number][] = [
    ['done', fill.done],
    ['ready', fill.ready],
    ['leased', fill.leased],
    ['dead', fill.dead],
  ];
  // Ids inserted in key order: each B-tree grows at its right edge instead of splitting
  // pages all over (a 1,000,000-row build in random order takes many minutes). The
  // states are interleaved over the ids.
  const total = plan.reduce((sum, [, n]) => sum + n, 0);
  const idAt = fill.id ?? sortedUuid4;
  const assigned = plan.map(() => 0);
  const stateOf = () => {
    // The state furthest behind its share so far.
    let best = 0;
    for (let k = 1; k < plan.length; k++) {
      const [, want] = plan[k] as [string, number];
      const [, wantBest] = plan[best] as [string, number];
      if (
        want > 0 &&
        (wantBest === 0 || (assigned[k] as number) / want < (assigned[best] as number) / wantBest)
      )
        best = k;
    }
    assigned[best] = (assigned[best] as number) + 1;
    return (plan[best] as [string, number])[0];
  };
  // The counting triggers cost two thirds of a bulk load: they are set aside for it and
  // the counters moved once per state and category at the end, in the same transaction
  // as the triggers' return, so the store's counters match its rows as after any write.
  const counting = raw
    .query<{ name: string; sql: string }, []>(
      "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('messages_count_insert', 'effects_count_insert')",
    )
    .all();
  for (const { name } of counting) raw.run(`DROP TRIGGER ${name}`);
  const effects = new Map<string, { n: number; total: number }>();
  let payloadBytes = 0;
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = idAt(i, total);
      const state = stateOf();
      const finished = state === 'done' || state === 'dead';
      const text = payload(i);
      payloadBytes += Buffer.byteLength(text);
      message.run(
        id,
        text,
        state,
        state === 'ready' ? 0 : 1,
        state === 'ready' ? 0 : 1,
        fill.finishedAt,
        state === 'leased' ? fill.now + 3600 : null,
        state === 'dead' ? 'invalid_payload' : null,
        fill.finishedAt,
        finished ? fill.finishedAt : fill.now,
      );
      if (state === 'done') {
        const category = CATEGORIES[i % 3] as string;
        const amount = 1 + ((i * 7919) % 99_999);
        effect.run(id, category, amount, fill.finishedAt);
        const sum = effects.get(category) ?? { n: 0, total: 0 };
        effects.set(category, { n: sum.n + 1, total: sum.total + amount });
      }
    }
  });
  for (let from = 0; from < total; from += 50_000) chunk(from, Math.min(total, from + 50_000));
  message.finalize();
  effect.finalize();
  raw.transaction(() => {
    for (const { sql } of counting) raw.run(sql);
    for (const [state, n] of plan)
      raw.run("UPDATE onceq_counts SET n = n + ? WHERE kind = 'state' AND key = ?", [n, state]);
    raw.run(
      "UPDATE onceq_counts SET n = n + ?, total = total + ? WHERE kind = 'storage' AND key = 'payload'",
      [total, payloadBytes],
    );
    for (const [category, { n, total: sum }] of effects)
      raw.run(
        `INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', ?, ?, ?)
         ON CONFLICT (kind, key) DO UPDATE SET n = n + excluded.n, total = total + excluded.total`,
        [category, n, sum],
      );
  })();
  raw.close(false);
  return performance.now() - t0;
}

export async function runStreams(
  scratch: string,
  opts: {
    messages: number;
    repeats: number;
    /** Ready messages for the worker of the prune figure: enough to outlast the prune. */
    readyForPrune: number;
    log: (text: string) => void;
  },
): Promise<StreamsResult> {
  const { log } = opts;
  // ---- 1. enqueue: lesson ids vs 36-character ids ----
  const lessonInput = jsonl(10_000, (i) => `E${String(i).padStart(4, '0')}`);
  const generalInput = jsonl(10_000, () => crypto.randomUUID());
  const orderedInput = jsonl(
    10_000,
    (i) => `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
  );
  const path = join(scratch, 'streams-enqueue.db');
  await enqueueRate(path, lessonInput, false); // warm-up
  const lesson: number[] = [];
  const general: number[] = [];
  const ordered: number[] = [];
  // Interleaved, so a noisy minute hurts each kind alike.
  for (let r = 0; r < Math.max(5, opts.repeats); r++) {
    lesson.push(await enqueueRate(path, lessonInput, false));
    general.push(await enqueueRate(path, generalInput, true));
    ordered.push(await enqueueRate(path, orderedInput, true));
  }
  const enqueueResult = {
    lessonRate: spread(lesson),
    generalRate: spread(general),
    ratio: spread(general).median / spread(lesson).median,
    orderedRate: spread(ordered),
    orderedRatio: spread(ordered).median / spread(lesson).median,
  };
  log(
    `  enqueue lesson ${Math.round(enqueueResult.lessonRate.median)}, random 36-char ${Math.round(enqueueResult.generalRate.median)}, ordered 36-char ${Math.round(enqueueResult.orderedRate.median)} lines/s`,
  );

  // ---- 2. claim and status on 1,000,000 messages ----
  const now = Math.floor(Date.now() / 1000);
  const big = join(scratch, 'streams-large.db');
  removeDb(big);
  await (await openStore(big, { idPolicy: GENERAL_POLICY })).close();
  const n = opts.messages;
  const buildMs = fillStore(big, {
    done: n * 0.8,
    ready: n * 0.1,
    leased: n * 0.05,
    dead: n * 0.05,
    finishedAt: now - 86_400,
    now,
  });
  log(`  built ${n} messages in ${Math.round(buildMs)} ms`);
  const claimMs: number[] = [];
  const statusMs: number[] = [];
  const store = await openStore(big);
  try {
    await status(store); // warm the page cache once, as a running system would be
    for (let r = 0; r < 50; r++) {
      const t0 = performance.now();
      const lease = await claim(store);
      claimMs.push(performance.now() - t0);
      if (lease === null) throw new Error('bench: nothing to claim in the large store');
    }
    for (let r = 0; r < Math.max(5, opts.repeats * 3); r++) {
      const t0 = performance.now();
      await status(store);
      statusMs.push(performance.now() - t0);
    }
  } finally {
    await store.close();
    removeDb(big);
  }
  const large = { messages: n, buildMs, claimMs: spread(claimMs), statusMs: spread(statusMs) };
  log(
    `  claim ${large.claimMs.median.toFixed(2)} ms, status ${large.statusMs.median.toFixed(1)} ms`,
  );

  // ---- 3. prune 100,000 while one worker runs ----
  const pruneResult = await pruneUnderLoad(scratch, now, opts.readyForPrune, log);
  return { enqueue: enqueueResult, large, prune: pruneResult };
}

const BIN = join(import.meta.dir, '../../../cli/src/bin.ts');

/**
 * One real `onceq worker` process (batch 100, SQLite FULL) runs on a store of 100,000
 * done messages 40 days old and `readyForWorker` ready ones. Its progress is sampled
 * every 250 ms from the maintained counters (`status`, a few rows) in this process:
 * alone for 10 s, then while `prune --done-older-than 30d` (default chunk 500 and duty
 * cycle 0.1) runs here on its own connection, then alone again for 10 s if it still has
 * work. The rate during the prune counts only the part of the prune during which the
 * worker still had messages (a paced prune can outlast the worker's backlog); it is
 * compared with the mean of the alone windows (so a drift of the machine's load counts
 * against neither). The worker is stopped with SIGTERM by its pid.
 */
async function pruneUnderLoad(
  scratch: string,
  now: number,
  readyForWorker: number,
  log: (text: string) => void,
): Promise<StreamsResult['prune']> {
  const path = join(scratch, 'streams-prune.db');
  removeDb(path);
  await (await openStore(path, { idPolicy: GENERAL_POLICY })).close();
  fillStore(path, {
    done: 100_000,
    ready: readyForWorker,
    leased: 0,
    dead: 0,
    finishedAt: now - 40 * 86_400,
    now,
  });
  const store = await openStore(path);
  const worker = Bun.spawn(['bun', BIN, 'worker', '--db', path, '--batch', '100'], {
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'ignore',
    env: { ...process.env },
  });
  const sample = async () => {
    const { messages } = await status(store);
    return { t: performance.now(), done: messages.done, ready: messages.ready };
  };
  const rate = (a: { t: number; done: number }, b: { t: number; done: number }) =>
    ((b.done - a.done) / (b.t - a.t)) * 1000;
  const window = async (ms: number) => {
    const a = await sample();
    await Bun.sleep(ms);
    return rate(a, await sample());
  };
  try {
    // Wait (bounded) until the worker has started processing.
    const first = await sample();
    for (let i = 0; i < 600 && (await sample()).done === first.done; i++) await Bun.sleep(50);
    const before = await window(10_000);
    const samples = [await sample()];
    let pruning = true;
    const sampler = (async () => {
      while (pruning) {
        await Bun.sleep(250);
        samples.push(await sample());
      }
    })();
    const t0 = performance.now();
    const pruned = (await prune(store, { doneOlderThanSeconds: 30 * 86_400 })).done;
    const pruneMs = performance.now() - t0;
    pruning = false;
    await sampler;
    samples.push(await sample());
    // The prune window, cut where the worker ran out of ready messages.
    const busy = samples.filter((x) => x.ready > 0);
    const last = busy[busy.length - 1] ?? samples[0];
    const overlapMs = (last?.t ?? 0) - (samples[0]?.t ?? 0);
    const duringRate = rate(
      samples[0] as { t: number; done: number },
      last as { t: number; done: number },
    );
    const stillRunning = (samples[samples.length - 1]?.ready ?? 0) > 0;
    const after = stillRunning ? await window(10_000) : null;
    const baselineRate = after === null ? before : (before + after) / 2;
    const valid = overlapMs >= 3000;
    log(
      `  prune ${pruned} in ${Math.round(pruneMs)} ms (worker busy for ${Math.round(overlapMs)} ms of it); worker ${Math.round(before)} / ${Math.round(duringRate)} / ${after === null ? 'out of work' : Math.round(after)} msg/s (alone / during / alone)${valid ? '' : ' (overlap under 3 s: not valid)'}`,
    );
    return {
      pruned,
      pruneMs,
      overlapMs,
      baselineRate,
      duringRate,
      slowdown: 1 - duringRate / baselineRate,
      readyForWorker,
      valid,
    };
  } finally {
    worker.kill('SIGTERM');
    await worker.exited;
    await store.close();
    removeDb(path);
  }
}
