/**
 * PostgreSQL's {@link Driver}. Every statement is a network round
 * trip here, and concurrent claimers are real, so the SQL differs from SQLite's where it
 * pays: the claim and its lazy recovery are one statement (`FOR UPDATE SKIP LOCKED`,
 * committing by itself), the ACK and its effect rows are one statement taking one array
 * per column, and the fence reads lock their rows (`FOR UPDATE`) because no single write
 * lock serializes writers.
 */
import {
  type FailureMove,
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../machine.ts';
import type { MessageState } from '../../states.ts';
import { crashPoint } from '../../testing/crash-points.ts';
import type { LeaseRef } from '../../types.ts';
import type { Store } from '../backend.ts';
import { type UserWrite, writeCompletions } from '../completion-write.ts';
import type {
  ClaimedRow,
  ClaimInput,
  CompleteOptions,
  CompleteReport,
  CompletionWrite,
  Driver,
  EnqueueDelay,
  FencedRow,
  NewMessage,
  SnapshotRow,
} from '../driver.ts';
import type { Executor } from '../executor.ts';
import * as shared from '../shared-statements.ts';
import * as ordering from '../sql/ordering.ts';
import { sharedDriver } from '../sql/shared-driver.ts';
import { type SqlDialect, statement, statementFor } from '../sql-text.ts';
import { completeRowsAlone, insertRows } from './completion-rows.ts';
import { readConnections } from './sql/connections.ts';
import { schemas } from './sql/schema.ts';
import { statisticsProbe } from './sql/statistics.ts';

/** A text as an SQL string literal (onceq's own constants: no quote to escape). */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The PostgreSQL channel a long-running worker LISTENs on; the payload is the schema. */
export const WAKE_CHANNEL = 'onceq_wake';

/**
 * Claim with its lazy recovery in one statement, so a claim is one round trip run as its
 * own transaction, and keeps §5's order: a leased row whose lease ran out is claimable
 * in this very claim, as if recovery had run first.
 *
 * - `expired`: every leased row whose lease ran out (locked; others' locks skipped).
 *   `ORDER BY lease_until` makes `messages_lease` (state, lease_until) the cheaper path
 *   even when the statistics say no row is leased: there `messages_claim` looked as
 *   cheap, and walking its `leased` range read every live lease (4,800 rows at 32
 *   workers) to find the expired ones.
 * - `ready`: the first `n` claimable ready rows by `(available_at, event_id)`, from the
 *   `messages_claim` index.
 * - `pick`: the first `n` of both, an expired row ranking at its `lease_until` (the
 *   `available_at` recovery would give it) and only with attempts left.
 * - `recovered`: expired rows not picked go back to ready, or to dead on the last
 *   attempt, exactly like SQLite's separate recovery statement.
 * - `claimed` leases the picked rows; a picked expired row also gets what recovery
 *   would have written (`available_at`, `last_error_*`). It finds them by primary key,
 *   `event_id = ANY(ARRAY(SELECT … FROM pick))`: joined with `FROM pick` instead, the
 *   planner hashed the whole table (a sequential scan of every message, 5,000 rows in
 *   the benchmark) to update 500 rows.
 * - `counted` appends the status counters' deltas (migration 0006): picked ready rows
 *   ready → leased (an expired row picked stays leased), recovered rows leased → ready
 *   or dead. Every picked row is locked by this statement, so `claimed` updates each one.
 */
const claimText = statementFor(
  'claim-with-recovery',
  (d: SqlDialect, n: number) => `
    WITH ${claimSteps(d, n)}
    SELECT event_id, generation, attempts, lease_until, payload, available_at FROM claimed`,
);

/**
 * The steps of {@link claimText} (`$1` now, `$2` the lease's seconds, `$3` max attempts),
 * also the second half of {@link ackOneAndClaimText}.
 */
function claimSteps(d: SqlDialect, n: number): string {
  const messages = d.table('messages');
  const now = d.now(1);
  const code = literal(LEASE_EXPIRED);
  return `expired AS (
      SELECT event_id, lease_until AS rank_at, attempts FROM ${messages}
      WHERE state = 'leased' AND lease_until <= ${now}
      ORDER BY lease_until
      FOR UPDATE SKIP LOCKED
    ), ready AS (
      SELECT event_id, available_at AS rank_at FROM ${messages}
      WHERE state = 'ready' AND available_at <= ${now}
      ORDER BY available_at, event_id
      LIMIT ${n}
      FOR UPDATE SKIP LOCKED
    ), pick AS (
      SELECT event_id, from_ready FROM (
        SELECT event_id, rank_at, true AS from_ready FROM ready
        UNION ALL
        SELECT event_id, rank_at, false FROM expired WHERE attempts < $3
      ) AS candidates
      ORDER BY rank_at, event_id
      LIMIT ${n}
    ), recovered AS (
      UPDATE ${messages} AS m SET
        state = CASE WHEN m.attempts < $3 THEN 'ready' ELSE 'dead' END,
        available_at = CASE WHEN m.attempts < $3 THEN m.lease_until ELSE m.available_at END,
        lease_until = NULL,
        last_error_code = ${code},
        last_error_detail = CASE WHEN m.attempts < $3 THEN ${literal(RECOVERED_DETAIL)} ELSE ${literal(RECOVERED_DEAD_DETAIL)} END,
        updated_at = ${now}
      FROM expired
      WHERE m.event_id = expired.event_id
        AND expired.event_id NOT IN (SELECT event_id FROM pick)
      RETURNING m.state
    ), claimed AS (
      UPDATE ${messages} AS m SET
        state = 'leased',
        attempts = m.attempts + 1,
        generation = m.generation + 1,
        lease_until = ${d.nowPlus(1, 2)},
        updated_at = ${now},
        available_at = CASE WHEN m.state = 'leased' THEN m.lease_until ELSE m.available_at END,
        last_error_code = CASE WHEN m.state = 'leased' THEN ${code} ELSE m.last_error_code END,
        last_error_detail = CASE WHEN m.state = 'leased' THEN ${literal(RECOVERED_DETAIL)} ELSE m.last_error_detail END
      WHERE m.event_id = ANY(ARRAY(SELECT event_id FROM pick))
      RETURNING m.event_id, m.generation, m.attempts, m.lease_until, m.payload, m.available_at
    ), counted AS (
      INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
      SELECT 'state', key, sum(d), 0 FROM (
        SELECT 'ready' AS key, -1 AS d FROM pick WHERE from_ready
        UNION ALL SELECT 'leased', 1 FROM pick WHERE from_ready
        UNION ALL SELECT 'leased', -1 FROM recovered
        UNION ALL SELECT state, 1 FROM recovered
      ) AS moves
      GROUP BY key HAVING sum(d) <> 0
    )`;
}

/** The claim with its recovery, on `x` (a transaction, or none: it commits by itself). */
async function claimOn(x: Executor, input: ClaimInput): Promise<ClaimedRow[]> {
  const d = x.dialect;
  const { rows } = await x.query<ClaimedRow>(claimText(d, input.limit), [
    d.nowValue(input.now),
    input.leaseSeconds,
    input.maxAttempts,
  ]);
  return inClaimOrder(rows);
}

/** Reads the messages for apply/fail, one array parameter for any number, locked until COMMIT. */
const readFencedText = statement(
  'read-fenced-array',
  (d) => `
    SELECT event_id, payload, state, generation, attempts, lease_until FROM ${d.table('messages')}
    WHERE event_id = ANY($1::text[])
    FOR UPDATE`,
);

/**
 * The fenced ACK of the `input` rows (`event_id`, `generation`) of an array statement,
 * now at $1, $2 their ids: leased → done for every pair still validly leased at now;
 * returns the ids it marked done. The rows are found by primary key from $2 (joined on
 * `input` alone, a small table is scanned whole and hashed) under the dialect's `liveLease`.
 * The `acked` step of {@link ackWithEffectsText} and {@link ackWithCompletionsText}.
 */
export function ackInput(d: SqlDialect): string {
  return `
      UPDATE ${d.table('messages')} AS m
      SET state = 'done', lease_until = NULL, updated_at = ${d.now(1)}
      FROM input
      WHERE m.event_id = ANY($2::text[])
        AND m.event_id = input.event_id
        AND m.generation = input.generation
        AND ${d.liveLease(1, 'm.')}
      RETURNING m.event_id
    `;
}

/**
 * The status counters' deltas of an ACK statement (migration 0006), the `counted` step of
 * each: the `acked` rows leased → done and, with `effects`, the `inserted` effect rows by
 * category (an `inserted` step returning `category` and `amount_cents`).
 */
export function ackCounts(d: SqlDialect, effects: boolean): string {
  const categories = effects
    ? `
        UNION ALL SELECT 'effect', category, count(*), sum(amount_cents) FROM inserted
        GROUP BY category`
    : '';
  return `
      INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
      SELECT 'state', 'leased', -count(*), 0 FROM acked HAVING count(*) > 0
      UNION ALL SELECT 'state', 'done', count(*), 0 FROM acked HAVING count(*) > 0${categories}
    `;
}

/**
 * The ACK and the effect rows in one statement, taking one array per column ($2 ids, $3
 * generations, $4 categories, $5 amounts; $1 now): leased → done for every
 * `(event_id, generation)` pair still validly leased at now, and an effect row for each
 * message it marked done, none for the others. Returns the ids it marked done.
 */
const ackWithEffectsText = statement(
  'ack-with-effects',
  (d) => `
    WITH input AS (
      SELECT * FROM unnest($2::text[], $3::integer[], $4::text[], $5::integer[])
        AS t(event_id, generation, category, amount_cents)
    ), acked AS (${ackInput(d)}), inserted AS (
      INSERT INTO ${d.table('effects')} (event_id, category, amount_cents, created_at)
      SELECT input.event_id, input.category, input.amount_cents, ${d.now(1)}
      FROM input JOIN acked ON acked.event_id = input.event_id
      RETURNING category, amount_cents
    ), counted AS (${ackCounts(d, true)})
    SELECT event_id FROM acked`,
);

/**
 * {@link ackWithEffectsText} for exactly one message, with scalar parameters ($2 id, $3
 * generation, $4 category, $5 amount; $1 now): the same fenced UPDATE and an effect row
 * only if it marked the row done, without the arrays (no array literals to build on the
 * client, no `unnest` and join on the server). How `complete` records one message's
 * effect when it claims nothing with it.
 */
const ackOneWithEffectText = statement(
  'ack-one-with-effect',
  (d) => `
    WITH ${ackOneSteps(d, 2)}
    SELECT event_id FROM acked`,
);

/**
 * The steps of one message's fenced ACK and effect row, the id, generation, category and
 * amount at placeholders `first` … `first + 3` (now at $1): `acked` (the id, if the fence
 * matched), `inserted`, `ack_counted`.
 */
function ackOneSteps(d: SqlDialect, first: number): string {
  const now = d.now(1);
  const [id, generation, category, amount] = [0, 1, 2, 3].map((i) => `$${first + i}`);
  return `acked AS (
      UPDATE ${d.table('messages')}
      SET state = 'done', lease_until = NULL, updated_at = ${now}
      WHERE event_id = ${id} AND generation = ${generation} AND ${d.liveLease(1)}
      RETURNING event_id
    ), inserted AS (
      INSERT INTO ${d.table('effects')} (event_id, category, amount_cents, created_at)
      SELECT event_id, ${category}::text, ${amount}::integer, ${now}
      FROM acked
      RETURNING category, amount_cents
    ), ack_counted AS (${ackCounts(d, true)})`;
}

/**
 * {@link ackOneWithEffectText} and {@link claimText} for `n` in one statement, committing
 * as one ($1 now, $2 the lease's seconds, $3 max attempts; $4 id, $5 generation, $6
 * category, $7 amount): the worker at batch 1 records a message and claims a later one
 * in one round trip and one commit. The ACK is fenced exactly as alone, and no row is
 * written by both halves: the ACK takes its row only while the lease holds at now
 * (`lease_until > now`), the claim's recovery only once it ran out (`lease_until <=
 * now`), the same reading. Returns the claimed rows (`acked` false) and the ACKed id, if
 * its fence matched (`acked` true).
 */
const ackOneAndClaimText = statementFor(
  'ack-one-and-claim',
  (d: SqlDialect, n: number) => `
    WITH ${ackOneSteps(d, 4)}, ${claimSteps(d, n)}
    SELECT event_id, generation, attempts, lease_until, payload, available_at, false AS acked
    FROM claimed
    UNION ALL SELECT event_id, NULL, NULL, NULL, NULL, NULL, true FROM acked`,
);

/**
 * The ACK and onceq's record of user completions in one statement, one array per column
 * ($2 ids, $3 generations, $4 summaries; $1 now): leased → done for every
 * `(event_id, generation)` pair still validly leased at now, and a `completions` row for
 * each message it marked done. Returns the ids it marked done; the users' writes then
 * run for those only.
 */
const ackWithCompletionsText = statement(
  'ack-with-completions',
  (d) => `
    WITH input AS (
      SELECT * FROM unnest($2::text[], $3::integer[], $4::text[]) AS t(event_id, generation, summary)
    ), acked AS (${ackInput(d)}), recorded AS (
      INSERT INTO ${d.table('completions')} (event_id, summary, created_at)
      SELECT input.event_id, input.summary, ${d.now(1)}
      FROM input JOIN acked ON acked.event_id = input.event_id
    ), counted AS (${ackCounts(d, false)})
    SELECT event_id FROM acked`,
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
       ordering_key, seq)
    SELECT input.event_id, input.payload, coalesce(input.state, 'ready'), 0, 0,
      greatest(clock.now + $7::bigint, $8::bigint), NULL, clock.now, clock.now,
      input.ordering_key, input.seq
    FROM (SELECT ${d.now(1)} AS now OFFSET 0) AS clock,
      unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
        AS input(event_id, payload, state, ordering_key, seq)
    ON CONFLICT (event_id) DO NOTHING`,
);

/**
 * New messages, one array per column, claimable at `max(now + $7, $8)`. A batch without keys sends empty arrays for the
 * key columns: `unnest` pads them with NULLs (a `ready` message without a key).
 */
async function insertMessages(
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  delay: EnqueueDelay = { seconds: 0, at: 0 },
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
  const values = [d.nowValue(now), ids, payloads, states, keys, seqs, delay.seconds, delay.at];
  return (await x.query(insertMessagesText(d), values)).changes;
}

/** Takes the keys' advisory locks (migration 0008's `onceq_lock_keys`), in the order given. */
const lockKeysText = statement(
  'lock-keys',
  (d) => `SELECT ${d.schema}.onceq_lock_keys($1::text[])`,
);

/**
 * The status counters' deltas (migration 0006) of a write that does not count itself in
 * its own statement (fail, release, redrive, a completion's separate ACK): $3 messages
 * moved from $1 to $2. In the write's transaction, so both commit as one.
 */
const countMovesText = statement(
  'count-moves',
  (d) => `
    INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total) VALUES
      ('state', $1::text, -$3::bigint, 0), ('state', $2::text, $3::bigint, 0)`,
);

/** Counts `n` messages moved `from` → `to` (none: no statement); returns `n`. */
async function moved(x: Executor, from: MessageState, to: MessageState, n: number) {
  if (n > 0) await x.query(countMovesText(x.dialect), [from, to, n]);
  return n;
}

/** {@link shared.fail} and its counter deltas. */
async function fail(x: Executor, lease: LeaseRef, move: FailureMove, now: number) {
  return moved(x, 'leased', move.state, await shared.fail(x, lease, move, now));
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
const sinceFold = new WeakMap<Store, number>();

async function sometimesFold(store: Store): Promise<void> {
  const count = (sinceFold.get(store) ?? 0) + 1;
  sinceFold.set(store, count % FOLD_EVERY);
  if (count < FOLD_EVERY) return;
  await store.read((x) => x.query(foldCountsText(x.dialect)));
}

type EffectWrite = Extract<CompletionWrite, { effect: unknown }>;

/** The parameters of {@link ackWithEffectsText}, one array per column. */
function ackValues(d: SqlDialect, succeeded: readonly EffectWrite[], now: number): unknown[] {
  const n = succeeded.length;
  const ids = new Array<string>(n);
  const generations = new Array<number>(n);
  const categories = new Array<string>(n);
  const amounts = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const { lease, effect } = succeeded[i] as EffectWrite;
    ids[i] = lease.eventId;
    generations[i] = lease.generation;
    categories[i] = effect.category;
    amounts[i] = effect.amountCents;
  }
  return [d.nowValue(now), ids, generations, categories, amounts];
}

/**
 * Every write of `writes`, each fenced on its own in its SQL `WHERE`, no read in front.
 * Money effects alone (the worker's common case) are one statement committing by itself
 * (effects + ACK: two round trips a batch with its claim); one money effect with
 * `claimNext` (the worker at batch 1) also claims in that statement
 * ({@link ackOneAndClaimText}: one round trip a message). Anything
 * else (or with `explicitTransaction`) is one transaction: the effects' statement, one
 * fenced UPDATE per failure with its counter deltas, and the user completions (their
 * ACKs and records in one statement, then their writes: completion-write.ts).
 */
async function complete(
  store: Store,
  writes: readonly CompletionWrite[],
  options: CompleteOptions = {},
): Promise<CompleteReport> {
  const now = store.clock();
  const written = new Map<string, FailureMove | null>();
  const effects = writes.filter((w): w is EffectWrite => 'effect' in w);
  const alone = options.explicitTransaction !== true;
  const [one] = effects;
  if (alone && options.claimNext !== undefined && writes.length === 1 && one !== undefined) {
    const next = options.claimNext;
    const { rows } = await store.read((x) =>
      x.query<ClaimedRow & { acked: boolean }>(ackOneAndClaimText(x.dialect, next.limit), [
        x.dialect.nowValue(now),
        next.leaseSeconds,
        next.maxAttempts,
        one.lease.eventId,
        one.lease.generation,
        one.effect.category,
        one.effect.amountCents,
      ]),
    );
    crashPoint('after-effect-insert');
    crashPoint('after-ack');
    const claimed: ClaimedRow[] = [];
    for (const row of rows) {
      if (row.acked) written.set(row.event_id, null);
      else claimed.push(row);
    }
    await sometimesFold(store);
    return { now, written, claimed: inClaimOrder(claimed) };
  }
  if (alone && effects.length === writes.length) {
    // One statement that commits by itself: no BEGIN/COMMIT round trips.
    const { rows: acked } = await store.read((x) =>
      effects.length === 1 && one !== undefined
        ? x.query<{ event_id: string }>(ackOneWithEffectText(x.dialect), [
            x.dialect.nowValue(now),
            one.lease.eventId,
            one.lease.generation,
            one.effect.category,
            one.effect.amountCents,
          ])
        : x.query<{ event_id: string }>(
            ackWithEffectsText(x.dialect),
            ackValues(x.dialect, effects, now),
          ),
    );
    // The effects went in with the ACK, committed: both crash points are this instant.
    crashPoint('after-effect-insert');
    crashPoint('after-ack');
    for (const row of acked) written.set(row.event_id, null);
    await sometimesFold(store);
    return { now, written };
  }
  const rowsOnly = writes.filter(
    (w): w is UserWrite => 'completion' in w && w.completion.write === null,
  );
  if (alone && rowsOnly.length === writes.length) {
    const done = await completeRowsAlone(store, rowsOnly, now);
    if (done !== undefined) {
      await sometimesFold(store);
      return { now, written: done };
    }
  }
  await store.transact(async (x) => {
    // A transaction PostgreSQL re-runs (deadlock) starts from nothing written.
    written.clear();
    const d = x.dialect;
    if (effects.length > 0) {
      const { rows: acked } = await x.query<{ event_id: string }>(
        ackWithEffectsText(d),
        ackValues(d, effects, now),
      );
      for (const row of acked) written.set(row.event_id, null);
      crashPoint('after-effect-insert');
    }
    for (const write of writes) {
      if (!('failure' in write)) continue;
      const { lease } = write;
      const move = write.failure(now);
      if ((await fail(x, lease, move, now)) === 1) written.set(lease.eventId, move);
    }
    const users = writes.filter((w): w is UserWrite => 'completion' in w);
    const done = await writeCompletions(x, users, now, {
      ackAll: async (all) => {
        const { rows: acked } = await x.query<{ event_id: string }>(ackWithCompletionsText(d), [
          d.nowValue(now),
          all.map((w) => w.lease.eventId),
          all.map((w) => w.lease.generation),
          all.map((w) => w.completion.summary ?? null),
        ]);
        return new Set(acked.map((row) => row.event_id));
      },
      ack: async (write) => moved(x, 'leased', 'done', await shared.ack(x, write.lease, now)),
      record: (write) => shared.insertCompletion(x, write.lease, write.completion.summary, now),
      fail: (write, move) => fail(x, write.lease, move, now),
      insert: (groups) => insertRows(x, groups),
    });
    for (const [id, result] of done) written.set(id, result);
    crashPoint('after-ack');
  });
  return { now, written };
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
  release: async (x, lease, now) =>
    moved(x, 'leased', 'ready', await shared.release(x, lease, now)),
  readForRedrive: shared.readForRedrive,
  redrive: async (x, ids, now) => {
    const redriven = await shared.redrive(x, ids, now);
    await moved(x, 'dead', 'ready', redriven.length);
    return redriven;
  },
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages,
  lockKeys: async (x, keys) => {
    if (keys.length > 0) await x.query(lockKeysText(x.dialect), [keys]);
  },
  skip: async (x, ids, now) => {
    const skipped = await ordering.skip(x, ids, now);
    await moved(x, 'dead', 'skipped', skipped.length);
    return skipped;
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
  async copyTo() {
    throw new TypeError('a PostgreSQL store is copied with pg_dump, not by onceq');
  },
};
