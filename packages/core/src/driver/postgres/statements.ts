/**
 * PostgreSQL's {@link Driver}. Every statement is a network round
 * trip here, and concurrent claimers are real, so the SQL differs from SQLite's where it
 * pays: the claim and its lazy recovery are one statement (`FOR UPDATE SKIP LOCKED`,
 * committing by itself; sql/claim.ts), a batch of results with its counters, its rows and
 * its next claim is one statement taking one array per column (the result template,
 * sql/complete.ts), and the fence reads lock their rows (`FOR UPDATE`) because no single
 * write lock serializes writers.
 */
import { DEFAULT_QUEUE } from '../../queues.ts';
import type { MessageState } from '../../states.ts';
import { needsTransaction, recordResults } from '../completion-write.ts';
import type {
  CompleteOptions,
  CompleteReport,
  CompletionWrite,
  Driver,
  EnqueueDelay,
  FencedRow,
  NewMessage,
  SnapshotRow,
} from '../driver.ts';
import type { Executor, StatementRunner } from '../executor.ts';
import * as shared from '../shared-statements.ts';
import * as ordering from '../sql/ordering.ts';
import { sharedDriver } from '../sql/shared-driver.ts';
import { statement, type Table } from '../sql-text.ts';
import { claimOn, literal } from './sql/claim.ts';
import { postgresTemplate } from './sql/complete.ts';
import { readConnections } from './sql/connections.ts';
import { pruneRowsCounted } from './sql/prune.ts';
import { releaseNext } from './sql/release.ts';
import { schemas } from './sql/schema.ts';
import { statisticsProbe } from './sql/statistics.ts';

/** The PostgreSQL channel a long-running worker LISTENs on; the payload is the schema. */
export const WAKE_CHANNEL = 'onceq_wake';

/** onceq's own tables, whose sizes `storageBytes` sums. */
const ONCEQ_TABLES: readonly Table[] = [
  'messages',
  'message_keys',
  'effects',
  'completions',
  'onceq_counts',
  'onceq_meta',
  'onceq_migrations',
  'deliveries',
  'delivery_attempts',
  'disabled_endpoints',
];

/** Reads the messages for apply/fail, one array parameter for any number, locked until COMMIT. */
const readFencedText = statement(
  'read-fenced-array',
  (d) => `
    SELECT event_id, payload, state, generation, attempts, lease_until FROM ${d.table('messages')}
    WHERE event_id = ANY($1::text[])
    FOR UPDATE`,
);

/**
 * New `ready` messages from one array per column ($2 ids, $3 payloads), the statement's
 * clock ($1) read once for every row (`clock`: `OFFSET 0` keeps the planner from pulling
 * the subquery up into the row, where the clock expression would run three times per
 * row). `ON CONFLICT (event_id) DO NOTHING` as SQLite's multi-row INSERT: a stored id is
 * skipped, not an error, the change count says how many rows were new, and a failed
 * CHECK still aborts the statement. One short text for any number of rows, so a whole
 * batch is one statement: no INSERT of thousands of placeholders for the server to parse
 * and plan, or to bind value by value (one bound value per column, not one per cell), and
 * the per-statement work (the counter trigger, opening the indexes) once per batch.
 */
const insertMessagesText = statement(
  'enqueue-insert-array',
  (d) => `
    INSERT INTO ${d.table('messages')}
      (event_id, payload, state, attempts, generation, available_at, lease_until, enqueued_at, updated_at,
       ordering_key, seq, queue)
    SELECT input.event_id, input.payload, coalesce(input.state, 'ready'), 0, 0,
      greatest(clock.now + $7::bigint, $8::bigint), NULL, clock.now, clock.now,
      input.ordering_key, input.seq, $9::text
    FROM (SELECT ${d.now(1)} AS now OFFSET 0) AS clock,
      unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
        AS input(event_id, payload, state, ordering_key, seq)
    ON CONFLICT (event_id) DO NOTHING`,
);

/**
 * New messages of queue $9, one array per column, claimable at `max(now + $7, $8)`. A batch without keys sends empty arrays for the
 * key columns: `unnest` pads them with NULLs (a `ready` message without a key).
 */
async function insertMessages(
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  delay: EnqueueDelay = { seconds: 0, at: 0 },
  queue: string = DEFAULT_QUEUE,
): Promise<number> {
  if (rows.length === 0) return 0;
  const n = rows.length;
  const ids = new Array<string>(n);
  const payloads = new Array<string>(n);
  const keyed = rows.some((row) => row.ordering !== undefined);
  const states = new Array<string | null>(keyed ? n : 0);
  const keys = new Array<string | null>(keyed ? n : 0);
  const seqs = new Array<number | null>(keyed ? n : 0);
  for (let i = 0; i < n; i++) {
    const row = rows[i] as NewMessage;
    ids[i] = row.eventId;
    payloads[i] = row.payload;
    if (keyed) {
      states[i] = row.ordering?.state ?? null;
      keys[i] = row.ordering?.name ?? null;
      seqs[i] = row.ordering?.seq ?? null;
    }
  }
  const d = x.dialect;
  const values = [
    d.nowValue(now),
    ids,
    payloads,
    states,
    keys,
    seqs,
    delay.seconds,
    delay.at,
    queue,
  ];
  return (await x.query(insertMessagesText(d), values)).changes;
}

/**
 * The positions of an enqueue's new keyed messages of queue $1 (migration 0019), one
 * array per column ($2 keys, $3 positions, $4 event ids): one statement for a batch.
 */
const insertKeyPositionsText = statement(
  'key-positions-insert-array',
  (d) => `
    INSERT INTO ${d.table('message_keys')} (queue, ordering_key, seq, event_id)
    SELECT $1::text, p.ordering_key, p.seq, p.event_id
    FROM unnest($2::text[], $3::bigint[], $4::text[]) AS p(ordering_key, seq, event_id)`,
);

async function insertKeyPositions(
  x: Executor,
  queue: string,
  positions: readonly ordering.KeyPosition[],
): Promise<void> {
  if (positions.length === 0) return;
  await x.query(insertKeyPositionsText(x.dialect), [
    queue,
    positions.map((p) => p.ordering_key),
    positions.map((p) => p.seq),
    positions.map((p) => p.event_id),
  ]);
}

/** Takes the keys' advisory locks (migration 0008's `onceq_lock_keys`), in the order given. */
const lockKeysText = statement(
  'lock-keys',
  (d) => `SELECT ${d.schema}.onceq_lock_keys($1::text[])`,
);

/**
 * The status counters' deltas (migrations 0006, 0012) of a write that does not count
 * itself in its own statement (fail, release, redrive, skip, a key's rejoin): the
 * messages `$3` moved from $1 to $2, for the store and for each one's queue. In the
 * write's transaction, so both commit as one.
 */
const countMovesText = statement(
  'count-moves',
  (d) => `
    WITH moved AS (SELECT queue FROM ${d.table('messages')} WHERE event_id = ANY($3::text[]))
    INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
    SELECT kind, key, sum(n), 0 FROM (
      SELECT 'state' AS kind, $1::text AS key, -1 AS n FROM moved
      UNION ALL SELECT 'state', $2::text, 1 FROM moved
      UNION ALL SELECT 'queue', queue || '/' || $1::text, -1 FROM moved WHERE queue <> 'default'
      UNION ALL SELECT 'queue', queue || '/' || $2::text, 1 FROM moved WHERE queue <> 'default'
    ) AS moves
    GROUP BY kind, key`,
);

/** Counts the messages `ids` moved `from` → `to` (none: no statement). */
async function moved(x: Executor, from: MessageState, to: MessageState, ids: readonly string[]) {
  if (ids.length > 0) await x.query(countMovesText(x.dialect), [from, to, ids]);
}

/**
 * Folds the counters' delta rows into one row per key: 0004's `onceq_counts_fold`, behind
 * the same transaction-scoped try-lock as its triggers' fold (a second folder skips
 * instead of waiting).
 */
const foldCountsText = statement(
  'fold-counts',
  (d) => `
    SELECT ${d.schema}.onceq_counts_fold()
    WHERE pg_try_advisory_xact_lock(hashtext(${literal(`${d.schema}.onceq_counts`)}))`,
);

/**
 * Every this many claims or ACKs of an open store, one also folds, so the delta rows
 * every one appends stay a few hundred however long the store runs and `status` sums few
 * rows. Counted, not drawn at random: how many rows a run leaves is the same every run.
 */
const FOLD_EVERY = 32;

/** Claims and ACKs each open store ran since it last folded. */
const sinceFold = new WeakMap<StatementRunner, number>();

async function sometimesFold(store: StatementRunner): Promise<void> {
  const count = (sinceFold.get(store) ?? 0) + 1;
  sinceFold.set(store, count % FOLD_EVERY);
  if (count < FOLD_EVERY) return;
  await store.read((x) => x.query(foldCountsText(x.dialect)));
}

/**
 * Every write of `writes` by the result template (sql/complete.ts), each fenced on its
 * own in its SQL `WHERE`, no read in front: without a `write(tx)` one statement
 * committing by itself (the batch, its counters and its claim: one round trip), else one
 * transaction (completion-write.ts), as with `explicitTransaction`.
 */
async function complete(
  store: StatementRunner,
  writes: readonly CompletionWrite[],
  options: CompleteOptions = {},
): Promise<CompleteReport> {
  const now = store.clock();
  const next = options.claimNext;
  const claim = next === undefined ? undefined : { ...next, now };
  const record = (x: Executor) => recordResults(x, writes, now, claim, postgresTemplate);
  const report =
    options.explicitTransaction === true || needsTransaction(writes)
      ? await store.transact(record)
      : await store.read(record);
  await sometimesFold(store);
  return { now, ...report };
}

/** Largest number of bound parameters one statement may carry. */
const MAX_PARAMETERS = 65_535;

const snapshot = shared.snapshotText('');

/**
 * `NOTIFY` in the caller's transaction (PostgreSQL delivers it at COMMIT, never on
 * rollback): enqueue and redrive wake sleeping workers of this store's schema at once.
 * The payload is the schema.
 */
const notifyText = statement(
  'notify-wake',
  (d) => `SELECT pg_notify('${WAKE_CHANNEL}', ${literal(d.schema ?? '')})`,
);

/** PostgreSQL's driver: fused where a statement saves a round trip, rows locked. */
export const postgresDriver: Driver = {
  capabilities: {
    skipLocked: true,
    maxParameters: MAX_PARAMETERS,
    backup: false,
    serverClock: true,
  },
  ...sharedDriver,
  claimInTransaction: claimOn,
  // One statement that commits by itself: no BEGIN/COMMIT round trips.
  claim: async (store, input) => {
    const rows = await store.read((x) => claimOn(x, { ...input, now: store.clock() }));
    await sometimesFold(store);
    return rows;
  },
  readFenced: async (x, leases) =>
    (await x.query<FencedRow>(readFencedText(x.dialect), [leases.map((l) => l.eventId)])).rows,
  complete,
  extend: shared.extend,
  release: async (x, lease, now) => {
    const n = await shared.release(x, lease, now);
    await moved(x, 'leased', 'ready', n > 0 ? [lease.eventId] : []);
    return n;
  },
  pruneRows: pruneRowsCounted,
  readForRedrive: shared.readForRedrive,
  redrive: async (x, ids, now) => {
    const redriven = await shared.redrive(x, ids, now);
    await moved(x, 'dead', 'ready', redriven);
    return redriven;
  },
  rejoinKey: async (x, eventId, now) => {
    const state = await ordering.rejoinKey(x, eventId, now);
    if (state === 'waiting') await moved(x, 'dead', 'waiting', [eventId]);
    return state;
  },
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages,
  insertKeyPositions,
  lockKeys: async (x, keys) => {
    if (keys.length > 0) await x.query(lockKeysText(x.dialect), [keys]);
  },
  skip: async (x, ids, now) => {
    const skipped = await ordering.skipRows(x, ids, now);
    const skippedIds = ordering.skippedIds(skipped);
    await moved(x, 'dead', 'skipped', skippedIds);
    await releaseNext(x, skipped, now);
    return skippedIds;
  },
  wake: async (x) => {
    await x.query(notifyText(x.dialect));
  },
  // One statement, no BEGIN/COMMIT round trips.
  snapshot: (store, now) =>
    store.read(async (x) => (await x.query<SnapshotRow>(snapshot(x.dialect), [now])).rows),
  // The server checks its own pages; foreign keys are enforced, never deferred.
  storageProbes: [],
  plannerProbes: [statisticsProbe],
  readConnections,
  schemas,
  async lockForRecount(x) {
    // Waits for running writes and blocks new ones until COMMIT.
    await x.query(
      `LOCK TABLE ${x.dialect.table('messages')}, ${x.dialect.table('effects')} IN SHARE MODE`,
    );
  },
  // Autovacuum gives space back; a manual VACUUM FULL would lock the tables for its run.
  vacuum: async () => false,
  // Autovacuum marks dead row versions reusable; nothing to give back by hand.
  releaseFreePages: async () => 0,
  // onceq's own tables only: the application's may share the schema.
  storageBytes: async (x) => {
    const { rows } = await x.query<{ bytes: string | number | null }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname = ANY($2::text[])`,
      [x.dialect.schema, ONCEQ_TABLES],
    );
    return Number(rows[0]?.bytes ?? 0);
  },
  async copyTo() {
    throw new TypeError('a PostgreSQL store is copied with pg_dump, not by onceq');
  },
};
