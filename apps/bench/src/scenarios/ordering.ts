/**
 * Ordering keys (docs/ordering.md) against the same events without keys:
 *
 * - throughput: `keys × perKey` events, event `i` of key `i mod keys` (so a key's events
 *   are spread over the whole batch), drained by N worker processes
 *   (worker-child.ts: `work()`, handler v1) once with `--key-field key` and once
 *   without; the payloads are the same bytes; once with time-ordered ids (UUIDv7) and
 *   once with random ones (UUIDv4): with random ids a key's next message is never near
 *   the one before it, and ordered work costs more than with ids sent in their text
 *   order (docs/operations.md); on SQLite the bare protocol (bare.ts) drains the same
 *   events too, which shows what the claim order costs without any of onceq's code;
 * - the claim's cost with messages waiting behind blocked keys: `blocked` keys whose
 *   head is dead with `behind` messages waiting after each, and `free` ready messages
 *   of other keys; each claim takes `limit` of them. The same claims on a store holding
 *   only the free messages are the reference.
 */
import { join } from 'node:path';
import { enqueue, openStore, PermanentFailure, type Store, work } from '@onceq/core';
import { claimMany, GENERAL_POLICY } from '@onceq/core/internal';
import { type IdKind, idSource } from '../ids.ts';
import { dropSchema, rawQuery } from '../raw-db.ts';
import { removeDb, type Spread, spread, wallMs } from '../util.ts';
import { ownRowsTable } from '../worker-child.ts';
import { type ProcessingRun, runProcessing, type StoreFactory } from './processing.ts';

const CATEGORIES = ['book', 'pen', 'bag'] as const;

/** How a run names its events and their keys. */
interface Names {
  /** Event `i` is `<ids>-<i>`, unless `id` names it. */
  ids: string;
  id?: (i: number) => string;
  /** Its key is `<keys>-<i mod key count>`. */
  keys: string;
}

/** Event `i` of key number `i mod keys`: a v1 payload that names its key. */
function keyedLine(i: number, keys: number, names: Names): string {
  const category = CATEGORIES[i % CATEGORIES.length];
  const amount = 1 + ((i * 7919) % 99_999);
  return `{"event_id":"${names.id?.(i) ?? `${names.ids}-${i}`}","payload":{"category":"${category}","amount_cents":${amount},"key":"${names.keys}-${i % keys}"}}`;
}

/** JSONL batches of 1,000 lines of events `0 … count-1` over `keys` keys. */
function keyedBatches(
  count: number,
  keys: number,
  names: Names = { ids: 'ev', keys: 'k' },
): string[] {
  const out: string[] = [];
  for (let start = 0; start < count; start += 1000) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(count, start + 1000); i++)
      lines.push(keyedLine(i, keys, names));
    out.push(`${lines.join('\n')}\n`);
  }
  return out;
}

/**
 * `count` event ids of one kind, in the order a source sends them: UUIDv7 (time-ordered:
 * their text order is their send order) or UUIDv4 (random).
 */
function eventIds(kind: IdKind, count: number): string[] {
  const next = idSource(kind);
  return Array.from({ length: count }, () => next());
}

/** `messages` events of `keys` keys, enqueued with or without `--key-field key`. */
function orderingFactory(
  backend: 'sqlite' | 'pg',
  where: string,
  keys: number,
  ordered: boolean,
  names: Names,
): StoreFactory {
  let counter = 0;
  const fill = async (store: Store, messages: number) => {
    for (const text of keyedBatches(messages, keys, names))
      await enqueue(store, text, ordered ? { keyField: 'key' } : {});
  };
  if (backend === 'sqlite') {
    return {
      backend,
      async prepare(messages) {
        const target = join(where, `ordering-${++counter}.db`);
        removeDb(target);
        const store = await openStore(target, { synchronous: 'NORMAL', idPolicy: GENERAL_POLICY });
        try {
          await fill(store, messages);
        } finally {
          await store.close();
        }
        await ownRowsTableIn(target, undefined);
        return { target };
      },
      async dispose(target) {
        removeDb(target);
      },
    };
  }
  return {
    backend,
    async prepare(messages) {
      const schema = `onceq_bench_ordering_${process.pid}_${++counter}`;
      const store = await openStore(where, { schema, idPolicy: GENERAL_POLICY });
      try {
        await fill(store, messages);
      } finally {
        await store.close();
      }
      await ownRowsTableIn(where, schema);
      await rawQuery(where, schema, 'ANALYZE messages');
      return { target: where, schema };
    },
    async dispose(target, schema) {
      if (schema !== undefined) await dropSchema(target, schema);
    },
  };
}

/** The own-row table the bench's stores carry (the run's check counts it). */
async function ownRowsTableIn(target: string, schema: string | undefined): Promise<void> {
  await rawQuery(
    target,
    schema,
    `CREATE TABLE ${ownRowsTable(schema)} (event_id TEXT PRIMARY KEY, category TEXT NOT NULL, amount_cents INTEGER NOT NULL)`,
  );
}

/** The median of the rounds' figures, or null when a round has none. */
function medianKnown(values: readonly (number | null)[]): number | null {
  if (values.length === 0 || values.some((v) => v === null)) return null;
  return spread(values as number[]).median;
}

/** One per-message figure, unordered and ordered; null where it was not measured. */
export interface ModePair {
  unordered: number | null;
  ordered: number | null;
}

export interface OrderingThroughput {
  backend: 'sqlite' | 'pg';
  ids: IdKind;
  keys: number;
  perKey: number;
  workers: number;
  batch: number;
  /** msg/s of each run, unordered and ordered (interleaved rounds). */
  unordered: Spread;
  ordered: Spread;
  /**
   * Bytes written per message (median of the rounds; null where unknown): on SQLite the
   * pages each of the worker's transactions wrote to the WAL, and to a temporary file
   * when a statement's journal outgrew memory; on PostgreSQL the WAL the server wrote.
   */
  written: ModePair;
  /**
   * The server's CPU µs per message (median of the rounds), for a PostgreSQL server on
   * this machine; null else.
   */
  serverCpu: ModePair;
  /**
   * On SQLite, the bare protocol (bare.ts: the protocol's statements on the same store,
   * whose schema's trigger releases a key's next message; no onceq code) on the same
   * events in the same rounds: what the claim order and the pages cost without onceq.
   * Null on PostgreSQL.
   */
  bare: Pick<OrderingThroughput, 'unordered' | 'ordered' | 'written' | 'serverCpu'> | null;
  /** Every run drained every message exactly once. */
  exact: boolean;
  errors: string[];
}

/**
 * `rounds` interleaved pairs (unordered, then ordered) of the same events drained by
 * `workers` processes at `batch`, on SQLite also by the bare protocol; the medians are
 * compared.
 */
export async function runOrderingThroughput(
  backend: 'sqlite' | 'pg',
  where: string,
  shape: {
    ids: IdKind;
    keys: number;
    perKey: number;
    workers: number;
    batch: number;
    rounds: number;
  },
  log: (line: string) => void,
  serverCpu: (() => number) | null = null,
): Promise<OrderingThroughput> {
  const impls = backend === 'sqlite' ? (['core', 'bare'] as const) : (['core'] as const);
  const tally = () => ({
    rates: [] as number[],
    written: [] as (number | null)[],
    serverCpu: [] as (number | null)[],
  });
  const runs = {
    core: { unordered: tally(), ordered: tally() },
    bare: { unordered: tally(), ordered: tally() },
  };
  const errors: string[] = [];
  let exact = true;
  const messages = shape.keys * shape.perKey;
  for (let round = 0; round < shape.rounds; round++) {
    // The same events, ids included, for both modes (and both implementations) of a round.
    const ids = eventIds(shape.ids, messages);
    const names: Names = { ids: 'ev', keys: 'k', id: (i) => ids[i] as string };
    for (const impl of impls) {
      for (const mode of ['unordered', 'ordered'] as const) {
        log(
          `ordering: ${backend}${impl === 'bare' ? ' (bare protocol)' : ''}, ${mode}, ${messages} events (${shape.ids}) of ${shape.keys} keys, ${shape.workers} worker(s), batch ${shape.batch}, round ${round + 1} …`,
        );
        const run: ProcessingRun = await runProcessing(
          orderingFactory(backend, where, shape.keys, mode === 'ordered', names),
          {
            backend,
            impl,
            effect: 'money',
            synchronous: backend === 'pg' ? 'FULL' : 'NORMAL',
            workers: shape.workers,
            batch: shape.batch,
            messages,
            serverCpu,
          },
        );
        runs[impl][mode].rates.push(run.rate);
        runs[impl][mode].written.push(run.writtenBytesPerMessage);
        runs[impl][mode].serverCpu.push(run.serverCpuUsPerMessage);
        exact &&= run.verified;
        if (!run.verified) errors.push(`${impl} ${mode}: ${run.verifyDetail}`);
        errors.push(...run.errors);
      }
    }
  }
  const figures = (impl: 'core' | 'bare') => ({
    unordered: spread(runs[impl].unordered.rates),
    ordered: spread(runs[impl].ordered.rates),
    written: {
      unordered: medianKnown(runs[impl].unordered.written),
      ordered: medianKnown(runs[impl].ordered.written),
    },
    serverCpu: {
      unordered: medianKnown(runs[impl].unordered.serverCpu),
      ordered: medianKnown(runs[impl].ordered.serverCpu),
    },
  });
  return {
    backend,
    ...shape,
    ...figures('core'),
    bare: backend === 'sqlite' ? figures('bare') : null,
    exact,
    errors,
  };
}

export interface BlockedClaim {
  backend: 'sqlite' | 'pg';
  blocked: number;
  behind: number;
  limit: number;
  /** ms per claim of `limit`, with the blocked keys and their waiting messages. */
  withBlocked: Spread;
  /** The same claims on a store of only the free messages. */
  reference: Spread;
  /** Messages in the measured store: dead heads, waiting, free. */
  stored: { dead: number; waiting: number; ready: number };
  /** What each claim of the blocked store handed out (must be free messages only). */
  claimedFree: boolean;
}

const refusing = () => {
  throw new PermanentFailure('bench_dead_head', 'the head of a blocked key');
};

/**
 * Claims of `limit` on a store with `blocked` keys held by a dead head and `behind`
 * messages waiting after each, plus `free` ready messages of other keys: each claim
 * timed alone (the leases are kept: later claims go further into the free messages).
 */
export async function runBlockedClaim(
  backend: 'sqlite' | 'pg',
  where: string,
  shape: { blocked: number; behind: number; free: number; limit: number },
): Promise<BlockedClaim> {
  const claims = Math.floor(shape.free / shape.limit);
  const measure = async (withBlocked: boolean) => {
    const schema = `onceq_bench_blocked_${process.pid}_${withBlocked ? 'b' : 'r'}`;
    const target = backend === 'sqlite' ? join(where, `blocked-${schema}.db`) : where;
    if (backend === 'sqlite') removeDb(target);
    else await dropSchema(where, schema);
    const store = await openStore(target, {
      idPolicy: GENERAL_POLICY,
      ...(backend === 'pg' ? { schema } : { synchronous: 'NORMAL' as const }),
    });
    try {
      if (withBlocked) {
        // Each blocked key's head first (they die), then everything behind them.
        const heads = keyedBatches(shape.blocked, shape.blocked, { ids: 'head', keys: 'k' });
        for (const text of heads) await enqueue(store, text, { keyField: 'key' });
        const died = await work(store, refusing, { batch: 500 });
        if (died.dead !== shape.blocked)
          throw new Error(`${died.dead} heads died, not ${shape.blocked}`);
        const waiting = shape.blocked * shape.behind;
        for (const text of keyedBatches(waiting, shape.blocked, { ids: 'behind', keys: 'k' }))
          await enqueue(store, text, { keyField: 'key' });
      }
      // The free messages: one per key of its own, ready.
      for (const text of keyedBatches(shape.free, shape.free, { ids: 'free', keys: 'free' }))
        await enqueue(store, text, { keyField: 'key' });
      if (backend === 'pg') await rawQuery(where, schema, 'ANALYZE messages');
      const counts = await rawQuery(
        target,
        backend === 'pg' ? schema : undefined,
        'SELECT state, count(*) AS n FROM messages GROUP BY state',
      );
      const stored = { dead: 0, waiting: 0, ready: 0 };
      for (const row of counts) {
        const state = String(row.state);
        if (state in stored) stored[state as keyof typeof stored] = Number(row.n);
      }
      const times: number[] = [];
      let claimedFree = true;
      for (let i = 0; i < claims; i++) {
        const t0 = wallMs();
        const leases = await claimMany(store, { limit: shape.limit });
        times.push(wallMs() - t0);
        claimedFree &&=
          leases.length === shape.limit && leases.every((l) => l.eventId.startsWith('free-'));
      }
      return { times, stored, claimedFree };
    } finally {
      await store.close();
      if (backend === 'sqlite') removeDb(target);
      else await dropSchema(where, schema);
    }
  };
  const reference = await measure(false);
  const blocked = await measure(true);
  return {
    backend,
    blocked: shape.blocked,
    behind: shape.behind,
    limit: shape.limit,
    withBlocked: spread(blocked.times),
    reference: spread(reference.times),
    stored: blocked.stored,
    claimedFree: blocked.claimedFree,
  };
}
