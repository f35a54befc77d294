/**
 * PostgreSQL's {@link Driver}. Every statement is a network round
 * trip here, and concurrent claimers are real, so the SQL differs from SQLite's where it
 * pays: the claim and its lazy recovery are one statement (`FOR UPDATE SKIP LOCKED`,
 * committing by itself), the ACK and its effect rows are one statement taking one array
 * per column, and the fence reads lock their rows (`FOR UPDATE`) because no single write
 * lock serializes writers.
 */
import { type RawBuilder, sql } from 'kysely';
import {
  type FailureMove,
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../machine.ts';
import { crashPoint } from '../../testing/crash-points.ts';
import type { Store } from '../backend.ts';
import { type UserWrite, writeCompletions } from '../completion-write.ts';
import type {
  ClaimedRow,
  CompleteOptions,
  CompleteReport,
  CompletionWrite,
  Driver,
  FencedRow,
} from '../driver.ts';
import { defineStatement, type Executor } from '../prepared.ts';
import * as shared from '../shared-statements.ts';
import { stateLiteral, statementNow, statementNowPlus } from '../shared-statements.ts';
import { sharedDriver } from '../sql/shared-driver.ts';
import { completeRowsAlone, insertRows, schemaOf } from './completion-rows.ts';
import { schemas } from './sql/schema.ts';
import { statisticsProbe } from './sql/statistics.ts';

/**
 * The tables as raw templates name them: the store's compile step qualifies them with
 * its schema (schema-scope.ts), so no statement depends on a `search_path`.
 */
const messagesTable = sql.table('messages');
const effectsTable = sql.table('effects');
const completionsTable = sql.table('completions');

/** The PostgreSQL channel a long-running worker LISTENs on; the payload is the schema. */
export const WAKE_CHANNEL = 'onceq_wake';

/**
 * Claim with its lazy recovery in one statement, so a claim is one round trip run as its
 * own transaction, and keeps §5's order: a leased row whose lease ran out is claimable
 * in this very claim, as if recovery had run first.
 *
 * - `expired`: every leased row whose lease ran out (locked; others' locks skipped).
 * - `ready`: the first `n` claimable ready rows by `(available_at, event_id)`, from the
 *   `messages_claim` index.
 * - `pick`: the first `n` of both, an expired row ranking at its `lease_until` (the
 *   `available_at` recovery would give it) and only with attempts left.
 * - `recovered`: expired rows not picked go back to ready, or to dead on the last
 *   attempt, exactly like SQLite's separate recovery statement.
 * - the UPDATE leases the picked rows; a picked expired row also gets what recovery
 *   would have written (`available_at`, `last_error_*`). It finds them by primary key,
 *   `event_id = ANY(ARRAY(SELECT … FROM pick))`: joined with `FROM pick` instead, the
 *   planner hashed the whole table (a sequential scan of every message, 5,000 rows in
 *   the benchmark) to update 500 rows.
 */
const claimWithRecovery = defineStatement<ClaimedRow>('claim-with-recovery', (context) => {
  const { p, n } = context;
  const now = statementNow(context);
  const maxAttempts = p.value<number>('maxAttempts');
  const leased = stateLiteral('leased');
  const ready = stateLiteral('ready');
  const code = sql.lit(LEASE_EXPIRED);
  return sql<ClaimedRow>`
    WITH expired AS (
      SELECT event_id, lease_until AS rank_at, attempts FROM ${messagesTable}
      WHERE state = ${leased} AND lease_until <= ${now}
      FOR UPDATE SKIP LOCKED
    ), ready AS (
      SELECT event_id, available_at AS rank_at FROM ${messagesTable}
      WHERE state = ${ready} AND available_at <= ${now}
      ORDER BY available_at, event_id
      LIMIT ${sql.lit(n)}
      FOR UPDATE SKIP LOCKED
    ), pick AS (
      SELECT event_id FROM (
        SELECT event_id, rank_at FROM ready
        UNION ALL
        SELECT event_id, rank_at FROM expired WHERE attempts < ${maxAttempts}
      ) AS candidates
      ORDER BY rank_at, event_id
      LIMIT ${sql.lit(n)}
    ), recovered AS (
      UPDATE ${messagesTable} AS m SET
        state = CASE WHEN m.attempts < ${maxAttempts} THEN ${ready} ELSE ${stateLiteral('dead')} END,
        available_at = CASE WHEN m.attempts < ${maxAttempts} THEN m.lease_until ELSE m.available_at END,
        lease_until = NULL,
        last_error_code = ${code},
        last_error_detail = CASE WHEN m.attempts < ${maxAttempts} THEN ${RECOVERED_DETAIL} ELSE ${RECOVERED_DEAD_DETAIL} END,
        updated_at = ${now}
      FROM expired
      WHERE m.event_id = expired.event_id
        AND expired.event_id NOT IN (SELECT event_id FROM pick)
    )
    UPDATE ${messagesTable} AS m SET
      state = ${leased},
      attempts = m.attempts + 1,
      generation = m.generation + 1,
      lease_until = ${statementNowPlus(context, 'leaseUntil', 'leaseSeconds')},
      updated_at = ${now},
      available_at = CASE WHEN m.state = ${leased} THEN m.lease_until ELSE m.available_at END,
      last_error_code = CASE WHEN m.state = ${leased} THEN ${code} ELSE m.last_error_code END,
      last_error_detail = CASE WHEN m.state = ${leased} THEN ${RECOVERED_DETAIL} ELSE m.last_error_detail END
    WHERE m.event_id = ANY(ARRAY(SELECT event_id FROM pick))
    RETURNING m.event_id, m.generation, m.attempts, m.lease_until, m.payload, m.available_at`;
});

/** Reads the messages for apply/fail, one array parameter for any number, locked until COMMIT. */
const readFenced = defineStatement<FencedRow>(
  'read-fenced-array',
  ({ p }) => sql<FencedRow>`
    SELECT event_id, payload, state, generation, attempts, lease_until FROM ${messagesTable}
    WHERE event_id = ANY(${p.value<string[]>('ids')}::text[])
    FOR UPDATE`,
);

/**
 * The fenced ACK of the `input` rows (`event_id`, `generation`) of an array statement:
 * leased → done for every pair still validly leased at `now`; returns the ids it marked
 * done. The `acked` step of {@link ackWithEffects} and {@link ackWithCompletions}.
 */
function ackInput(now: number): RawBuilder<unknown> {
  return sql`
      UPDATE ${messagesTable} AS m
      SET state = ${stateLiteral('done')}, lease_until = NULL, updated_at = ${now}
      FROM input
      WHERE m.event_id = input.event_id
        AND m.generation = input.generation
        AND m.state = ${stateLiteral('leased')}
        AND m.lease_until > ${now}
      RETURNING m.event_id
    `;
}

/**
 * The ACK and the effect rows in one statement, taking one array per column: leased →
 * done for every `(event_id, generation)` pair still validly leased at `now`, and an
 * effect row for each message it marked done, none for the others. Returns the ids it
 * marked done.
 */
const ackWithEffects = defineStatement<{ event_id: string }>(
  'ack-with-effects',
  (context) => sql<{ event_id: string }>`
    WITH input AS (
      SELECT * FROM unnest(
        ${context.p.value<string[]>('ids')}::text[],
        ${context.p.value<number[]>('generations')}::integer[],
        ${context.p.value<string[]>('categories')}::text[],
        ${context.p.value<number[]>('amounts')}::integer[]
      ) AS t(event_id, generation, category, amount_cents)
    ), acked AS (${ackInput(statementNow(context))}), inserted AS (
      INSERT INTO ${effectsTable} (event_id, category, amount_cents, created_at)
      SELECT input.event_id, input.category, input.amount_cents, ${statementNow(context)}
      FROM input JOIN acked ON acked.event_id = input.event_id
    )
    SELECT event_id FROM acked`,
);

/**
 * {@link ackWithEffects} for exactly one message, with scalar parameters: the same fenced
 * UPDATE and an effect row only if it marked the row done, without the arrays (no
 * array literals to build on the client, no `unnest` and join on the server). How
 * `complete` records one message's effect, the per-message hot path.
 */
const ackOneWithEffect = defineStatement<{ event_id: string }>('ack-one-with-effect', (context) => {
  const { p } = context;
  const now = statementNow(context);
  return sql<{ event_id: string }>`
    WITH acked AS (
      UPDATE ${messagesTable}
      SET state = ${stateLiteral('done')}, lease_until = NULL, updated_at = ${now}
      WHERE event_id = ${p.value<string>('id')}
        AND generation = ${p.value<number>('generation')}
        AND state = ${stateLiteral('leased')}
        AND lease_until > ${now}
      RETURNING event_id
    ), inserted AS (
      INSERT INTO ${effectsTable} (event_id, category, amount_cents, created_at)
      SELECT event_id, ${p.value<string>('category')}::text, ${p.value<number>('amount')}::integer,
        ${now}
      FROM acked
    )
    SELECT event_id FROM acked`;
});

/**
 * The ACK and onceq's record of user completions in one statement, one array per column:
 * leased → done for every `(event_id, generation)` pair still validly leased at `now`,
 * and a `completions` row for each message it marked done. Returns the ids it marked
 * done; the users' writes then run for those only.
 */
const ackWithCompletions = defineStatement<{ event_id: string }>(
  'ack-with-completions',
  (context) => sql<{ event_id: string }>`
    WITH input AS (
      SELECT * FROM unnest(
        ${context.p.value<string[]>('ids')}::text[],
        ${context.p.value<number[]>('generations')}::integer[],
        ${context.p.value<(string | null)[]>('summaries')}::text[]
      ) AS t(event_id, generation, summary)
    ), acked AS (${ackInput(statementNow(context))}), recorded AS (
      INSERT INTO ${completionsTable} (event_id, summary, created_at)
      SELECT input.event_id, input.summary, ${statementNow(context)}
      FROM input JOIN acked ON acked.event_id = input.event_id
    )
    SELECT event_id FROM acked`,
);

/**
 * New `ready` messages from one array per column, the server's clock read once for every
 * row (`clock`). `ON CONFLICT (event_id) DO NOTHING` as the shared multi-row INSERT: a
 * stored id is skipped, not an error, the change count says how many rows were new, and
 * a failed CHECK still aborts the statement. One short text for any number of rows: no
 * INSERT of 4,000 placeholders to compile per schema and arity, to parse and plan on
 * the server, or to bind value by value (one bound value per column, not one per cell).
 */
const insertMessagesArray = defineStatement('enqueue-insert-array', (context) => {
  const { p } = context;
  return sql`
    INSERT INTO ${messagesTable}
      (event_id, payload, state, attempts, generation, available_at, lease_until, enqueued_at, updated_at)
    SELECT input.event_id, input.payload, ${stateLiteral('ready')}, 0, 0, clock.now, NULL, clock.now, clock.now
    FROM unnest(${p.value<string[]>('ids')}::text[], ${p.value<string[]>('payloads')}::text[])
        AS input(event_id, payload),
      (SELECT ${statementNow(context)} AS now) AS clock
    ON CONFLICT (event_id) DO NOTHING`;
});

async function insertMessages(
  x: Executor,
  rows: readonly { eventId: string; payload: string }[],
  now: number,
): Promise<number> {
  if (rows.length === 0) return 0;
  const ids = new Array<string>(rows.length);
  const payloads = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as { eventId: string; payload: string };
    ids[i] = row.eventId;
    payloads[i] = row.payload;
  }
  return x.changes(insertMessagesArray, { ids, payloads, now });
}

/**
 * `NOTIFY` in the caller's transaction (PostgreSQL delivers it at COMMIT, never on
 * rollback): enqueue and redrive wake sleeping workers of this schema at once.
 */
const notifyWake = defineStatement(
  'notify-wake',
  ({ schema }) => sql`SELECT pg_notify(${sql.lit(WAKE_CHANNEL)}, ${sql.lit(schema ?? '')})`,
);

type EffectWrite = Extract<CompletionWrite, { effect: unknown }>;

function ackValues(succeeded: readonly EffectWrite[], now: number) {
  return {
    ids: succeeded.map((s) => s.lease.eventId),
    generations: succeeded.map((s) => s.lease.generation),
    categories: succeeded.map((s) => s.effect.category),
    amounts: succeeded.map((s) => s.effect.amountCents),
    now,
  };
}

/**
 * Every write of `writes`, each fenced on its own in its SQL `WHERE`, no read in front.
 * Money effects alone (the worker's common case) are one statement committing by itself
 * (effects + ACK: two round trips a message with its claim, or two a batch); a single
 * failure too. Anything else (or with `explicitTransaction`) is one transaction: the
 * effects' statement, one fenced UPDATE per failure, and the user completions (their
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
  const [only] = writes;
  const alone = options.explicitTransaction !== true;
  if (alone && effects.length === writes.length) {
    const [one] = effects;
    const acked =
      effects.length === 1 && one !== undefined
        ? await store.autocommit(ackOneWithEffect, {
            id: one.lease.eventId,
            generation: one.lease.generation,
            category: one.effect.category,
            amount: one.effect.amountCents,
            now,
          })
        : await store.autocommit(ackWithEffects, ackValues(effects, now));
    // The effects went in with the ACK, committed: both crash points are this instant.
    crashPoint('after-effect-insert');
    crashPoint('after-ack');
    for (const row of acked) written.set(row.event_id, null);
    return { now, written };
  }
  const rowsOnly = writes.filter(
    (w): w is UserWrite => 'completion' in w && w.completion.write === null,
  );
  if (alone && rowsOnly.length === writes.length) {
    const done = await completeRowsAlone(store, rowsOnly, now);
    if (done !== undefined) return { now, written: done };
  }
  if (alone && writes.length === 1 && only !== undefined && 'failure' in only) {
    const move = only.failure(now);
    const moved = await store.autocommit(
      shared.settleFailureReturning,
      shared.failValues(only.lease, move, now),
    );
    crashPoint('after-ack');
    if (moved.length === 1) written.set(only.lease.eventId, move);
    return { now, written };
  }
  await store.transact(async (x) => {
    // A transaction PostgreSQL re-runs (deadlock) starts from nothing written.
    written.clear();
    if (effects.length > 0) {
      const acked = await x.rows(ackWithEffects, ackValues(effects, now));
      for (const row of acked) written.set(row.event_id, null);
      crashPoint('after-effect-insert');
    }
    for (const write of writes) {
      if (!('failure' in write)) continue;
      const { lease } = write;
      const move = write.failure(now);
      if ((await shared.fail(x, lease, move, now)) === 1) written.set(lease.eventId, move);
    }
    const users = writes.filter((w): w is UserWrite => 'completion' in w);
    const done = await writeCompletions(x, users, now, {
      ackAll: async (all) => {
        const acked = await x.rows(ackWithCompletions, {
          ids: all.map((w) => w.lease.eventId),
          generations: all.map((w) => w.lease.generation),
          summaries: all.map((w) => w.completion.summary ?? null),
          now,
        });
        return new Set(acked.map((row) => row.event_id));
      },
      ack: (write) => shared.ack(x, [write.lease], now),
      record: async (write) => {
        await x.changes(shared.insertCompletion, {
          id: write.lease.eventId,
          summary: write.completion.summary,
          now,
        });
      },
      fail: (write, move) => shared.fail(x, write.lease, move, now),
      insert: (groups) => insertRows(x, groups, schemaOf(store)),
    });
    for (const [id, result] of done) written.set(id, result);
    crashPoint('after-ack');
  });
  return { now, written };
}

function claimValues(input: { now: number; leaseSeconds: number; maxAttempts: number }) {
  return {
    now: input.now,
    leaseUntil: input.now + input.leaseSeconds,
    leaseSeconds: input.leaseSeconds,
    maxAttempts: input.maxAttempts,
  };
}

/** Largest number of bound parameters one statement may carry. */
const MAX_PARAMETERS = 65_535;

const snapshot = shared.snapshotStatement('snapshot', sql``);

/** PostgreSQL's driver: fused where a statement saves a round trip, rows locked. */
export const postgresDriver: Driver = {
  capabilities: {
    skipLocked: true,
    maxParameters: MAX_PARAMETERS,
    backup: false,
    serverClock: true,
  },
  ...sharedDriver,
  claimInTransaction: async (x, input) =>
    inClaimOrder(await x.rows(claimWithRecovery, claimValues(input), input.limit)),
  // One statement that commits by itself: no BEGIN/COMMIT round trips.
  claim: async (store, input) =>
    inClaimOrder(
      await store.autocommit(
        claimWithRecovery,
        claimValues({ ...input, now: store.clock() }),
        input.limit,
      ),
    ),
  readFenced: (x, leases) => x.rows(readFenced, { ids: leases.map((l) => l.eventId) }),
  complete,
  extend: shared.extend,
  release: shared.release,
  readForRedrive: (x, ids) => x.rows(shared.redriveCheckLocked, { ids }, ids.length),
  redrive: shared.redrive,
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages,
  wake: async (x) => {
    await x.rows(notifyWake, {});
  },
  // One statement, no BEGIN/COMMIT round trips.
  snapshot: (store, now) => store.autocommit(snapshot, { now }),
  // The server checks its own pages; foreign keys are enforced, never deferred.
  storageProbes: [],
  plannerProbes: [statisticsProbe],
  schemas,
  async lockForRecount(x) {
    // Waits for running writes and blocks new ones until COMMIT.
    await x.query('LOCK TABLE messages, effects IN SHARE MODE');
  },
  // Autovacuum gives space back; a manual VACUUM FULL would lock the tables for its run.
  vacuum: async () => false,
  async copyTo() {
    throw new TypeError('a PostgreSQL store is copied with pg_dump, not by onceq');
  },
};
