/**
 * The ordered kill storm of tests/storms/storm-ordered.test.ts: events of many ordering
 * keys (`--key-field key`), each payload carrying its key's sequence number, processed
 * by long-running `onceq worker` processes with the handler tests/support/handlers/ordered.ts,
 * which inserts one row `applied (key, seq, event_id)` per message with its ACK. A few
 * events fail permanently (a dead head that blocks its key for good), a few fail their
 * first attempt (a retry that holds the key back). The batches are enqueued one by one
 * while the workers run, and after each one a worker is SIGKILLed (preferably while
 * leases are live) and replaced. Then the storm settles: messages that died of the kills
 * (leases expired too often) are redriven until only the planned dead heads are left.
 *
 * What the store must then hold ({@link expectedOrder}): for every key, its applied rows
 * in commit order are exactly its events 1, 2, 3, … up to its dead head (or all of them),
 * so no event was applied twice or skipped and a key's sequence never went backwards;
 * the head is the key's only dead message and everything after it is still waiting.
 */
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQL } from 'bun';
import { runOnceqRun, traceLines } from './storm.ts';
import { startWorker, type WorkerProcess } from './worker-process.ts';

export const ORDERED_HANDLER = join(import.meta.dir, 'handlers', 'ordered.ts');

/** The handler's code for a permanent refusal: the storm's planned dead heads. */
const POISON = 'poison';

export interface OrderedStormPlan {
  backend: 'sqlite' | 'postgres';
  /** `--db` value of every CLI process: a SQLite file or a PostgreSQL URL (a pooler's too). */
  db: string;
  /** Where the test itself reads (and creates `applied`): the file, or a direct URL. */
  direct: string;
  keys: number;
  perKey: number;
  workers: number;
  /** SIGKILLs, one after each batch after the first (so the batches are `kills + 1`). */
  kills: number;
  random: () => number;
}

/** One key's events, and which one its handler refuses for good (if any). */
export interface KeyPlan {
  key: string;
  /** Its events' ids, in order. */
  ids: string[];
  /** The sequence number of the event refused for good, or null. */
  poison: number | null;
}

export interface OrderedStormReport {
  keys: KeyPlan[];
  kills: number;
  /** Kills that hit while the store showed live leases. */
  killsAtLiveLeases: number;
  /** Messages dead of the kills (not of the handler), redriven while settling. */
  redriven: number;
  /** The most messages of one key seen leased at once, sampled all through the storm. */
  maxLeasedPerKey: number;
  /** Stack-trace lines in the workers' output (a worker stopped by SIGTERM must print none). */
  traceLines: number;
  /** Workers stopped by SIGTERM at the end that did not exit 0, with their stderr. */
  badExits: string[];
}

/** The event id of event `seq` (1-based) of key number `k`: the store's lesson id policy. */
function idOf(k: number, perKey: number, seq: number): string {
  return `E${String(k * perKey + seq).padStart(4, '0')}`;
}

/**
 * The plan of the events: every sixth key gets a dead head somewhere after its first
 * event, and about one event in ten fails its first attempt.
 */
function planKeys(plan: OrderedStormPlan): {
  keys: KeyPlan[];
  lines: string[];
} {
  const keys: KeyPlan[] = [];
  const queues: string[][] = [];
  for (let k = 0; k < plan.keys; k++) {
    const key = `k${String(k).padStart(3, '0')}`;
    // Every sixth key (so every storm has some) dies at a random event after its first.
    const poison = k % 6 === 1 ? 2 + Math.floor(plan.random() * (plan.perKey - 1)) : null;
    const ids = Array.from({ length: plan.perKey }, (_, i) => idOf(k, plan.perKey, i + 1));
    keys.push({ key, ids, poison });
    const lines: string[] = [];
    for (let seq = 1; seq <= plan.perKey; seq++) {
      const fail = seq === poison ? 'permanent' : plan.random() < 0.1 ? 'temporary' : undefined;
      const payload = { key, seq, work_ms: 2, ...(fail === undefined ? {} : { fail }) };
      lines.push(JSON.stringify({ event_id: ids[seq - 1], payload }));
    }
    queues.push(lines);
  }
  // Interleave the keys at random, each key's events keeping their order.
  const lines: string[] = [];
  const left = queues.filter((q) => q.length > 0);
  while (left.length > 0) {
    const i = Math.floor(plan.random() * left.length);
    const q = left[i] as string[];
    lines.push(q.shift() as string);
    if (q.length === 0) left.splice(i, 1);
  }
  return { keys, lines };
}

/** Plain reads of the store beside the workers (never through onceq). */
export interface StoreReader {
  rows(text: string): Promise<Record<string, unknown>[]>;
  /** onceq's own table or the test's `applied`, as the backend names it. */
  table(name: string): string;
  /** Runs a statement that writes (the test's own table). */
  exec(text: string): Promise<void>;
  close(): Promise<void>;
}

export function storeReader(backend: 'sqlite' | 'postgres', direct: string): StoreReader {
  if (backend === 'sqlite') {
    return {
      async rows(text) {
        const db = new Database(direct, { readonly: true });
        try {
          return db.query(text).all() as Record<string, unknown>[];
        } finally {
          db.close();
        }
      },
      table: (name) => name,
      async exec(text) {
        const db = new Database(direct);
        try {
          db.exec('PRAGMA busy_timeout = 10000');
          db.exec(text);
        } finally {
          db.close();
        }
      },
      async close() {},
    };
  }
  const sql = new SQL(direct);
  return {
    rows: (text) => sql.unsafe(text) as Promise<Record<string, unknown>[]>,
    table: (name) => `onceq.${name}`,
    async exec(text) {
      await sql.unsafe(text);
    },
    close: () => sql.close(),
  };
}

async function count(reader: StoreReader, where: string): Promise<number> {
  const [row] = await reader.rows(
    `SELECT count(*) AS n FROM ${reader.table('messages')} WHERE ${where}`,
  );
  return Number(row?.n ?? 0);
}

/** The most messages of one key leased right now (1 at most, by the rule). */
async function leasedPerKey(reader: StoreReader): Promise<number> {
  const [row] = await reader.rows(
    `SELECT coalesce(max(n), 0) AS n FROM (SELECT count(*) AS n FROM ${reader.table('messages')}
      WHERE state = 'leased' AND ordering_key IS NOT NULL GROUP BY ordering_key) per_key`,
  );
  return Number(row?.n ?? 0);
}

export async function orderedStorm(plan: OrderedStormPlan): Promise<OrderedStormReport> {
  const cwd = mkdtempSync(join(tmpdir(), 'onceq-ordered-storm-'));
  const reader = storeReader(plan.backend, plan.direct);
  const workers: WorkerProcess[] = [];
  const all: WorkerProcess[] = [];
  let maxLeasedPerKey = 0;
  const sample = async () => {
    maxLeasedPerKey = Math.max(maxLeasedPerKey, await leasedPerKey(reader));
  };
  try {
    const { keys, lines } = planKeys(plan);
    const files: string[] = [];
    const per = Math.ceil(lines.length / (plan.kills + 1));
    for (let i = 0; i * per < lines.length; i++) {
      const file = join(cwd, `batch-${i}.jsonl`);
      writeFileSync(file, `${lines.slice(i * per, (i + 1) * per).join('\n')}\n`);
      files.push(file);
    }
    const db = ['--db', plan.db];
    const enqueue = async (file: string) => {
      const run = await runOnceqRun(['enqueue', file, ...db, '--key-field', 'key'], cwd);
      if (run.code !== 0) throw new Error(`enqueue ${file} failed:\n${run.stderr}`);
    };
    await enqueue(files[0] as string);
    // The handler's own table; `id` grows in commit order (a key's next message is
    // released only when the one before it committed).
    await reader.exec(
      plan.backend === 'sqlite'
        ? 'CREATE TABLE applied (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL)'
        : 'CREATE TABLE onceq.applied (id bigserial PRIMARY KEY, key text NOT NULL, seq int NOT NULL, event_id text NOT NULL)',
    );
    const start = () => {
      const worker = startWorker(
        [...db, '--handler', ORDERED_HANDLER, '--lease', '2', '--batch', '10'],
        cwd,
      );
      all.push(worker);
      return worker;
    };
    for (let i = 0; i < plan.workers; i++) workers.push(start());

    let kills = 0;
    let killsAtLiveLeases = 0;
    for (const file of files.slice(1)) {
      await enqueue(file);
      // A moment with live leases (bounded: kill anyway after ~2 s), then a shot.
      let live = await count(reader, "state = 'leased'");
      for (let look = 0; look < 40 && live === 0; look++) {
        await Bun.sleep(50);
        live = await count(reader, "state = 'leased'");
      }
      await sample();
      await Bun.sleep(plan.random() * 200);
      const slot = Math.floor(plan.random() * workers.length);
      const victim = workers[slot] as WorkerProcess;
      process.kill(victim.pid, 'SIGKILL');
      kills++;
      if (live > 0) killsAtLiveLeases++;
      workers[slot] = start();
    }

    // Settle: wait until nothing is ready or leased (every key done or held by a dead
    // head); redrive what died of the kills; again, until only planned heads are dead.
    let redriven = 0;
    for (let round = 0; ; round++) {
      await until(
        async () => {
          await sample();
          return (await count(reader, "state IN ('ready', 'leased')")) === 0;
        },
        180_000,
        () => `the storm never settled:\n${all.map((w) => w.stderr()).join('\n')}`,
      );
      const dead = await reader.rows(
        `SELECT event_id FROM ${reader.table('messages')}
          WHERE state = 'dead' AND (last_error_code IS NULL OR last_error_code <> '${POISON}')`,
      );
      if (dead.length === 0) break;
      if (round === 5) throw new Error(`messages keep dying of the kills: ${dead.length} left`);
      const run = await runOnceqRun(
        ['redrive', ...dead.map((r) => String(r.event_id)), ...db],
        cwd,
      );
      if (run.code !== 0) throw new Error(`redrive failed:\n${run.stderr}`);
      redriven += dead.length;
    }

    const badExits: string[] = [];
    for (const worker of workers) {
      // A replacement still starting up has no signal handler yet: SIGTERM once it runs.
      await worker.waitForLog(/worker started/, 60_000);
      worker.signal('SIGTERM');
      const code = await worker.exited(60_000);
      if (code !== 0) badExits.push(`worker ${worker.pid} exited ${code}:\n${worker.stderr()}`);
    }
    for (const worker of all) await worker.exited(60_000);
    return {
      keys,
      kills,
      killsAtLiveLeases,
      redriven,
      maxLeasedPerKey,
      traceLines: all.reduce((sum, w) => sum + traceLines(w.stderr()), 0),
      badExits,
    };
  } finally {
    for (const worker of all) {
      try {
        process.kill(worker.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await reader.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** Polls `done` (each call a read) until it holds; throws `why()` after `timeoutMs`. */
async function until(
  done: () => Promise<boolean>,
  timeoutMs: number,
  why: () => string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(why());
    await Bun.sleep(100);
  }
}

/** What the store holds after the storm, per key, read with plain SQL. */
export interface OrderFacts {
  /** Each key's applied event ids in commit order. */
  applied: Record<string, string[]>;
  /** Each key's dead messages. */
  dead: Record<string, string[]>;
  /** Each key's waiting messages. */
  waiting: Record<string, string[]>;
  /** Messages in any other state than done, dead or waiting. */
  unfinished: number;
}

export async function orderFacts(reader: StoreReader): Promise<OrderFacts> {
  const group = (rows: Record<string, unknown>[]) => {
    const out: Record<string, string[]> = {};
    for (const r of rows) {
      const key = String(r.key);
      out[key] = [...(out[key] ?? []), String(r.event_id)];
    }
    return out;
  };
  const applied = group(
    await reader.rows(`SELECT key, event_id FROM ${reader.table('applied')} ORDER BY id`),
  );
  const inState = async (state: string) =>
    group(
      await reader.rows(
        `SELECT ordering_key AS key, event_id FROM ${reader.table('messages')}
          WHERE state = '${state}' ORDER BY ordering_key, seq`,
      ),
    );
  return {
    applied,
    dead: await inState('dead'),
    waiting: await inState('waiting'),
    unfinished: await count(reader, "state NOT IN ('done', 'dead', 'waiting')"),
  };
}

/** What {@link orderFacts} must read after a storm of `keys`. */
export function expectedOrder(keys: readonly KeyPlan[]): OrderFacts {
  const facts: OrderFacts = { applied: {}, dead: {}, waiting: {}, unfinished: 0 };
  for (const { key, ids, poison } of keys) {
    facts.applied[key] = ids.slice(0, poison === null ? ids.length : poison - 1);
    if (poison !== null) {
      facts.dead[key] = [ids[poison - 1] as string];
      if (poison < ids.length) facts.waiting[key] = ids.slice(poison);
    }
  }
  return facts;
}
