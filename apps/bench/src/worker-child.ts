/**
 * One worker process of a multi-process run. Usage: `bun worker-child.ts '<json spec>'`.
 *
 * Opens the store (core: `openStore`; bare: {@link BareQueue}), prints `ready`, waits
 * for a line on stdin (the start barrier, so process start-up is not measured), runs
 * until nothing is claimable, then prints one JSON line ({@link ChildResult}).
 * An error (e.g. a SQLITE_BUSY that escaped the retries) is reported, not thrown.
 */
import { type Handler, openStore, type Store, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { BareQueue, type BareSummary } from './bare.ts';
import { errorText, ioBytes, ioSince, wallMs } from './util.ts';

/** What the handler records with each ACK: see {@link ChildSpec.effect}. */
export type OwnRowEffect = 'money' | 'own-row' | 'own-row-write';

export interface ChildSpec {
  impl: 'core' | 'bare';
  /**
   * The money effect (handler v1), or a completion's own row (core only): declared as
   * `insert` ({@link ownRow}), or written by `write(tx)` ({@link ownRowWrite}).
   */
  effect: OwnRowEffect;
  /** SQLite file or PostgreSQL URL. */
  target: string;
  synchronous: 'FULL' | 'NORMAL';
  batch: number;
  /** PostgreSQL schema (core only). */
  schema?: string;
  /** Messages to drain before `ready`, outside the measured window (core only). Default 0. */
  warmUp?: number;
}

export interface ChildResult {
  startMs: number;
  endMs: number;
  claimed: number;
  done: number;
  lost: number;
  failed: number;
  /** Claim-to-ACK latency of every message, ms: from asking for work to the ACK commit. */
  latencies: number[];
  /** Transactions run (claim + apply, including the final empty claim). */
  transactions: number;
  busyRetries: number;
  /**
   * CPU time (user + system) this process spent between the barrier and its end, ms.
   * Unlike wall time it barely moves when other processes load the machine, so the
   * core/bare CPU ratio shows the abstraction's cost even on a busy machine.
   */
  cpuMs?: number;
  /**
   * Bytes this process handed to write calls between the barrier and its end (Linux
   * `/proc/self/io` `wchar`: SQLite's WAL, checkpoints and temporary files; null
   * elsewhere). On SQLite, what the store's pages cost in writes.
   */
  writtenBytes?: number | null;
  /**
   * Bytes this process read through read calls between the barrier and its end (`rchar`):
   * on SQLite the pages missing from its own cache, read from the operating system's.
   */
  readBytes?: number | null;
  error: string | null;
}

/** The table {@link ownRow} writes to, created empty with every bench store. */
export const OWN_ROWS_TABLE = 'bench_own_rows';

/** Its qualified name: in the store's PostgreSQL schema, or in the SQLite file. */
export function ownRowsTable(schema: string | undefined): string {
  return schema === undefined ? OWN_ROWS_TABLE : `"${schema}".${OWN_ROWS_TABLE}`;
}

/**
 * A handler of an application's own: v1's checks, then, instead of the money effect, one
 * row of its own per message in {@link OWN_ROWS_TABLE}, declared as the completion's
 * `insert` (onceq inserts a batch's rows with one statement, in the ACK's transaction).
 */
function ownRow(schema: string | undefined): Handler {
  const table = schema === undefined ? OWN_ROWS_TABLE : `${schema}.${OWN_ROWS_TABLE}`;
  return (payload, context) => {
    const { category, amountCents } = handlers.v1(payload, context);
    return {
      summary: `${category} ${amountCents}`,
      insert: { [table]: { event_id: context.eventId, category, amount_cents: amountCents } },
    };
  };
}

/**
 * {@link ownRow}'s row written by the completion's `write(tx)` instead: one statement
 * through `tx.query` per message, one round trip each.
 */
function ownRowWrite(schema: string | undefined): Handler {
  const table = ownRowsTable(schema);
  return (payload, context) => {
    const { category, amountCents } = handlers.v1(payload, context);
    return {
      summary: `${category} ${amountCents}`,
      async write(tx) {
        const [a, b, c] = tx.kind === 'postgres' ? ['$1', '$2', '$3'] : ['?', '?', '?'];
        await tx.query(
          `INSERT INTO ${table} (event_id, category, amount_cents) VALUES (${a}, ${b}, ${c})`,
          [context.eventId, category, amountCents],
        );
      },
    };
  };
}

const HANDLERS: Record<OwnRowEffect, (schema: string | undefined) => Handler> = {
  money: () => handlers.v1,
  'own-row': ownRow,
  'own-row-write': ownRowWrite,
};

/** CPU time of this process so far, ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** What this process read and wrote since `start`, as a result reports it. */
function ioResult(
  start: ReturnType<typeof ioBytes>,
): Pick<ChildResult, 'readBytes' | 'writtenBytes'> {
  const io = ioSince(start);
  return { readBytes: io?.read ?? null, writtenBytes: io?.written ?? null };
}

/** The parent's lines on stdin, one reader for the child's life. */
const fromParent = console[Symbol.asyncIterator]();

/** A barrier: the parent's next line. EOF without one means the run was called off. */
async function waitForGo(): Promise<void> {
  if ((await fromParent.next()).done) process.exit(3);
}

/**
 * While a child waits at the start barrier, a statement on each of its pooled
 * connections every 3 s: the store's pool closes a connection idle for 10 s, and 64
 * children waiting for the slowest one's warm-up would otherwise reconnect all at once
 * inside the window. Returns the stop.
 */
function keepConnections(store: Store): () => void {
  const ping = () => store.read((x) => x.query('SELECT 1')).catch(() => {});
  const timer = setInterval(() => void Promise.all([ping(), ping()]), 3000);
  return () => clearInterval(timer);
}

async function runCore(spec: ChildSpec): Promise<ChildResult> {
  const opened = await openStore(spec.target, {
    synchronous: spec.synchronous,
    ...(spec.schema ? { schema: spec.schema } : {}),
  });
  // Time every transaction (core runs its writes through `transact`, PostgreSQL's
  // one-statement claim and settle through `read`, each statement committing by itself):
  // the first one after a progress report is the claim of that batch, so progress time
  // minus its start is the batch's claim-to-ACK latency.
  let firstStart = Number.NaN;
  let transactions = 0;
  const store = { ...opened } as Store;
  for (const name of ['transact', 'read'] as const) {
    const original = (opened as unknown as Record<string, unknown>)[name];
    if (typeof original !== 'function') continue;
    (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      transactions++;
      if (Number.isNaN(firstStart)) firstStart = wallMs();
      return original.apply(opened, args);
    };
  }
  const handler = HANDLERS[spec.effect](spec.schema);
  if (spec.warmUp !== undefined && spec.warmUp > 0) {
    const warm = await work(opened, handler, { batch: spec.batch, max: spec.warmUp });
    if (warm.done !== spec.warmUp) throw new Error(`warm-up did ${warm.done} of ${spec.warmUp}`);
  }
  const latencies: number[] = [];
  let claimedBefore = 0;
  process.stdout.write('ready\n');
  const stopReady = keepConnections(opened);
  await waitForGo();
  stopReady();
  const cpuStart = cpuMs();
  const ioStart = ioBytes();
  const result: ChildResult = {
    startMs: wallMs(),
    endMs: 0,
    claimed: 0,
    done: 0,
    lost: 0,
    failed: 0,
    latencies,
    transactions: 0,
    busyRetries: 0,
    error: null,
  };
  try {
    const summary = await work(store, handler, {
      batch: spec.batch,
      onProgress: (s) => {
        const latency = wallMs() - firstStart;
        for (let i = claimedBefore; i < s.claimed; i++) latencies.push(latency);
        claimedBefore = s.claimed;
        firstStart = Number.NaN;
      },
    });
    result.claimed = summary.claimed;
    result.done = summary.done;
    result.lost = summary.lost;
    result.failed = summary.retried + summary.dead;
  } catch (error) {
    result.error = errorText(error);
  }
  result.endMs = wallMs();
  result.cpuMs = cpuMs() - cpuStart;
  Object.assign(result, ioResult(ioStart));
  result.transactions = transactions;
  result.busyRetries = opened.busyRetries();
  await opened.close();
  return result;
}

async function runBare(spec: ChildSpec): Promise<ChildResult> {
  const queue = new BareQueue(spec.target, spec.synchronous);
  const summary: BareSummary = { claimed: 0, done: 0, lost: 0, failed: 0 };
  const latencies: number[] = [];
  let transactions = 0;
  process.stdout.write('ready\n');
  await waitForGo();
  const cpuStart = cpuMs();
  const ioStart = ioBytes();
  const startMs = wallMs();
  let error: string | null = null;
  try {
    for (;;) {
      const t0 = wallMs();
      transactions++;
      const leases = queue.claim(spec.batch);
      if (leases.length === 0) break;
      summary.claimed += leases.length;
      transactions++;
      queue.apply(leases, handlers.v1, summary);
      const latency = wallMs() - t0;
      for (let i = 0; i < leases.length; i++) latencies.push(latency);
    }
  } catch (e) {
    error = errorText(e);
  }
  const endMs = wallMs();
  const cpu = cpuMs() - cpuStart;
  const io = ioResult(ioStart);
  queue.close();
  return {
    startMs,
    endMs,
    cpuMs: cpu,
    ...io,
    ...summary,
    latencies,
    transactions,
    busyRetries: 0,
    error,
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ChildSpec;
  const result = spec.impl === 'bare' ? await runBare(spec) : await runCore(spec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
