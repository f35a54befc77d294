import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Store } from './backend/backend.ts';
import { defineStatement, type Executor } from './backend/prepared.ts';
import { LeaseLostError } from './errors.ts';
import type { Database } from './schema.ts';
import type { MessageState } from './states.ts';
import type { Effect, FailInput, LeaseRef } from './types.ts';

/**
 * The only code that writes `messages.state`. Every transition out of `leased` is
 * fenced in its SQL `WHERE` on state, generation and lease, and reports how many rows
 * it changed: zero means the caller lost the lease.
 *
 * The hot transitions are prepared statements (built once per store and arity, see
 * backend/prepared.ts); redrive, which is rare, uses the query builder directly.
 */

/**
 * A state as an SQL literal, not a bound parameter, so the planner can match it against
 * the leading column of `messages_claim` / `messages_lease` when it prepares the
 * statement (see tests/query-plans.test.ts).
 */
export function stateLiteral(state: MessageState): RawBuilder<MessageState> {
  return sql.lit(state);
}

/** The columns a claim returns, in claim order. */
export interface ClaimedRow {
  event_id: string;
  generation: number;
  attempts: number;
  lease_until: number;
  payload: string;
  available_at: number;
}

/**
 * ready → leased for up to `n` claimable rows, oldest `(available_at, event_id)` first,
 * as one `UPDATE … RETURNING`. On PostgreSQL the pick is `FOR UPDATE SKIP LOCKED`:
 * concurrent claimers skip each other's rows instead of waiting. The UPDATE goes by
 * primary key: the subquery already holds the rows (write lock or row locks).
 */
const claimRows = defineStatement<ClaimedRow>('claim', ({ db, p, n, capabilities }) => {
  let pick = db
    .selectFrom('messages')
    .select('event_id')
    .where('state', '=', stateLiteral('ready'))
    .where('available_at', '<=', p.value<number>('now'))
    .orderBy('available_at')
    .orderBy('event_id')
    .limit(n);
  if (capabilities.skipLocked) pick = pick.forUpdate().skipLocked();
  return db
    .updateTable('messages')
    .set((eb) => ({
      state: stateLiteral('leased'),
      attempts: eb('attempts', '+', 1),
      generation: eb('generation', '+', 1),
      lease_until: p.value<number>('leaseUntil'),
      updated_at: p.value<number>('now'),
    }))
    .where('event_id', 'in', pick)
    .returning(['event_id', 'generation', 'attempts', 'lease_until', 'payload', 'available_at']);
});

/**
 * Claim with its lazy recovery in one statement (backends with `fusedStatements`), so a
 * claim is one round trip run as its own transaction, and keeps §5's order: a leased row
 * whose lease ran out is claimable in this very claim, as if recovery had run first.
 *
 * - `expired`: every leased row whose lease ran out (locked; others' locks skipped).
 * - `ready`: the first `n` claimable ready rows by `(available_at, event_id)`, from the
 *   `messages_claim` index.
 * - `pick`: the first `n` of both, an expired row ranking at its `lease_until` (the
 *   `available_at` recovery would give it) and only with attempts left.
 * - `recovered`: expired rows not picked go back to ready, or to dead on the last
 *   attempt, exactly like {@link recover}.
 * - the UPDATE leases the picked rows; a picked expired row also gets what recovery
 *   would have written (`available_at`, `last_error_*`).
 */
const claimWithRecovery = defineStatement<ClaimedRow>('claim-with-recovery', ({ p, n }) => {
  const now = p.value<number>('now');
  const maxAttempts = p.value<number>('maxAttempts');
  const leased = stateLiteral('leased');
  const ready = stateLiteral('ready');
  return sql<ClaimedRow>`
    WITH expired AS (
      SELECT event_id, lease_until AS rank_at, attempts FROM messages
      WHERE state = ${leased} AND lease_until <= ${now}
      FOR UPDATE SKIP LOCKED
    ), ready AS (
      SELECT event_id, available_at AS rank_at FROM messages
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
      UPDATE messages AS m SET
        state = CASE WHEN m.attempts < ${maxAttempts} THEN ${ready} ELSE ${stateLiteral('dead')} END,
        available_at = CASE WHEN m.attempts < ${maxAttempts} THEN m.lease_until ELSE m.available_at END,
        lease_until = NULL,
        last_error_code = 'lease_expired',
        last_error_detail = CASE WHEN m.attempts < ${maxAttempts} THEN ${RETRIED} ELSE ${LAST_ATTEMPT} END,
        updated_at = ${now}
      FROM expired
      WHERE m.event_id = expired.event_id
        AND expired.event_id NOT IN (SELECT event_id FROM pick)
    )
    UPDATE messages AS m SET
      state = ${leased},
      attempts = m.attempts + 1,
      generation = m.generation + 1,
      lease_until = ${p.value<number>('leaseUntil')},
      updated_at = ${now},
      available_at = CASE WHEN m.state = ${leased} THEN m.lease_until ELSE m.available_at END,
      last_error_code = CASE WHEN m.state = ${leased} THEN 'lease_expired' ELSE m.last_error_code END,
      last_error_detail = CASE WHEN m.state = ${leased} THEN ${RETRIED} ELSE m.last_error_detail END
    FROM pick
    WHERE m.event_id = pick.event_id
    RETURNING m.event_id, m.generation, m.attempts, m.lease_until, m.payload, m.available_at`;
});

/**
 * Lazy recovery, then ready → leased for up to `limit` rows; returns them in claim order.
 * One statement where the backend fuses them, else two, in the caller's transaction `x`.
 * `x = null` (fused backends only) runs the one statement as its own transaction.
 */
export async function toLeased(
  store: Store,
  x: Executor | null,
  now: number,
  limit: number,
  leaseSeconds: number,
): Promise<ClaimedRow[]> {
  const values = { now, leaseUntil: now + leaseSeconds, maxAttempts: store.protocol.maxAttempts };
  let rows: ClaimedRow[];
  if (store.capabilities.fusedStatements) {
    rows = x
      ? await x.rows(claimWithRecovery, values, limit)
      : await store.autocommit(claimWithRecovery, values, limit);
  } else {
    if (x === null) throw new Error('toLeased: this backend needs a transaction for its claim');
    await x.changes(recover, values);
    rows = await x.rows(claimRows, values, limit);
  }
  // RETURNING order is not guaranteed: restore claim order.
  return rows.sort((a, b) =>
    a.available_at === b.available_at
      ? a.event_id < b.event_id
        ? -1
        : 1
      : Number(a.available_at) - Number(b.available_at),
  );
}

const RETRIED = 'the lease expired before an ACK; retried';
const LAST_ATTEMPT = 'the lease expired before an ACK on the last attempt';

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left, else to `dead` with `lease_expired`.
 *
 * SQLite only (PostgreSQL recovers inside {@link claimWithRecovery}). `INDEXED BY` pins
 * the partial `messages_lease` index: without statistics SQLite's planner would rather
 * walk every leased row of `messages_claim`, and with it a missing index is an error at
 * prepare time instead of a silent scan.
 */
const recover = defineStatement('recover', ({ p }) => {
  const now = p.value<number>('now');
  const retry = sql`attempts < ${p.value<number>('maxAttempts')}`;
  return sql`
    UPDATE messages INDEXED BY messages_lease SET
      state = CASE WHEN ${retry} THEN ${stateLiteral('ready')} ELSE ${stateLiteral('dead')} END,
      available_at = CASE WHEN ${retry} THEN lease_until ELSE available_at END,
      lease_until = NULL,
      last_error_code = 'lease_expired',
      last_error_detail = CASE WHEN ${retry} THEN ${RETRIED} ELSE ${LAST_ATTEMPT} END,
      updated_at = ${now}
    WHERE state = ${stateLiteral('leased')} AND lease_until <= ${now}`;
});

/** The columns apply and fail read under the fence. */
export interface FencedRow {
  event_id: string;
  payload: string;
  state: MessageState;
  generation: number;
  attempts: number;
  lease_until: number | null;
}

/** Reads `n` messages for apply/fail (PostgreSQL: `FOR UPDATE`, so no claim re-leases them meanwhile). */
const readFenced = defineStatement<FencedRow>('read-fenced', ({ db, p, n, capabilities }) => {
  const query = db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'state', 'generation', 'attempts', 'lease_until'])
    .where('event_id', 'in', p.list<string>('ids', n));
  return capabilities.skipLocked ? query.forUpdate() : query;
});

/** {@link readFenced} with one array parameter: one statement for any number of ids. */
const readFencedArray = defineStatement<FencedRow>(
  'read-fenced-array',
  ({ p }) => sql<FencedRow>`
    SELECT event_id, payload, state, generation, attempts, lease_until FROM messages
    WHERE event_id = ANY(${p.value<string[]>('ids')}::text[])
    FOR UPDATE`,
);

export function readForFence(
  store: Store,
  x: Executor,
  leases: readonly LeaseRef[],
): Promise<FencedRow[]> {
  const ids = leases.map((l) => l.eventId);
  return store.capabilities.fusedStatements
    ? x.rows(readFencedArray, { ids })
    : x.rows(readFenced, { ids }, leases.length);
}

/** The effect rows of `n` messages, one INSERT. */
const insertEffects = defineStatement('insert-effects', ({ db, p, n }) => {
  const ids = p.list<string>('ids', n);
  const categories = p.list<string>('categories', n);
  const amounts = p.list<number>('amounts', n);
  return db.insertInto('effects').values(
    ids.map((id, i) => ({
      event_id: id,
      category: categories[i] as string,
      amount_cents: amounts[i] as number,
      created_at: p.value<number>('now'),
    })),
  );
});

export async function insertEffectRows(
  x: Executor,
  rows: readonly { eventId: string; category: string; amountCents: number }[],
  now: number,
): Promise<void> {
  await x.changes(
    insertEffects,
    {
      ids: rows.map((r) => r.eventId),
      categories: rows.map((r) => r.category),
      amounts: rows.map((r) => r.amountCents),
      now,
    },
    rows.length,
  );
}

/**
 * The ACK and the effect rows in one statement (backends with `fusedStatements`), taking
 * one array per column: leased → done for every `(event_id, generation)` pair still
 * validly leased at `now`, and an effect row for each message it marked done, none for
 * the others. Returns the ids it marked done.
 */
const ackWithEffects = defineStatement<{ event_id: string }>(
  'ack-with-effects',
  ({ p }) => sql<{ event_id: string }>`
    WITH input AS (
      SELECT * FROM unnest(
        ${p.value<string[]>('ids')}::text[],
        ${p.value<number[]>('generations')}::integer[],
        ${p.value<string[]>('categories')}::text[],
        ${p.value<number[]>('amounts')}::integer[]
      ) AS t(event_id, generation, category, amount_cents)
    ), acked AS (
      UPDATE messages AS m
      SET state = ${stateLiteral('done')}, lease_until = NULL, updated_at = ${p.value<number>('now')}
      FROM input
      WHERE m.event_id = input.event_id
        AND m.generation = input.generation
        AND m.state = ${stateLiteral('leased')}
        AND m.lease_until > ${p.value<number>('now')}
      RETURNING m.event_id
    ), inserted AS (
      INSERT INTO effects (event_id, category, amount_cents, created_at)
      SELECT input.event_id, input.category, input.amount_cents, ${p.value<number>('createdAt')}
      FROM input JOIN acked ON acked.event_id = input.event_id
    )
    SELECT event_id FROM acked`,
);

/**
 * Backends with `fusedStatements`: the effect rows (stamped `createdAt`) and the ACK
 * (fenced in SQL at `now`) of `succeeded` in one statement. Returns how many messages it
 * marked done; the caller rolls back unless that is all of them.
 */
export async function toDoneWithEffects(
  x: Executor,
  succeeded: readonly { lease: LeaseRef; effect: Effect }[],
  createdAt: number,
  now: number,
): Promise<number> {
  const acked = await x.rows(ackWithEffects, {
    ids: succeeded.map((s) => s.lease.eventId),
    generations: succeeded.map((s) => s.lease.generation),
    categories: succeeded.map((s) => s.effect.category),
    amounts: succeeded.map((s) => s.effect.amountCents),
    createdAt,
    now,
  });
  return acked.length;
}

/** leased → done for every `(event_id, generation)` pair still validly leased at `now`. */
const ack = defineStatement('ack', ({ db, p, n }) => {
  const ids = p.list<string>('ids', n);
  const generations = p.list<number>('generations', n);
  return db
    .updateTable('messages')
    .set({ state: stateLiteral('done'), lease_until: null, updated_at: p.value<number>('now') })
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', p.value<number>('now'))
    .where('event_id', 'in', ids)
    .where((eb) =>
      eb.or(
        ids.map((id, i) =>
          eb.and([eb('event_id', '=', id), eb('generation', '=', generations[i] as number)]),
        ),
      ),
    );
});

export function toDone(x: Executor, leases: readonly LeaseRef[], now: number): Promise<number> {
  if (leases.length === 0) return Promise.resolve(0);
  return x.changes(
    ack,
    {
      ids: leases.map((l) => l.eventId),
      generations: leases.map((l) => l.generation),
      now,
    },
    leases.length,
  );
}

/** leased → ready or dead after a failure, fenced on the one lease. */
const settleFailure = defineStatement('settle-failure', ({ db, p }) =>
  db
    .updateTable('messages')
    .set({
      state: p.value<MessageState>('state'),
      available_at: p.value<number>('availableAt'),
      lease_until: null,
      last_error_code: p.value<string>('code'),
      last_error_detail: p.value<string>('detail'),
      updated_at: p.value<number>('now'),
    })
    .where('event_id', '=', p.value<string>('id'))
    .where('generation', '=', p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', p.value<number>('now')),
);

/**
 * leased → ready (temporary failure with attempts left, available after backoff) or →
 * dead (permanent failure, or the last attempt failed). `attempts` is the row's current
 * value, read under the same fence. A dead message's `available_at` is the time it died.
 */
export async function toFailed(
  store: Store,
  x: Executor,
  lease: LeaseRef,
  attempts: number,
  failure: FailInput,
  now: number,
): Promise<{ state: 'ready' | 'dead'; availableAt: number }> {
  const retry = failure.kind === 'temporary' && attempts < store.protocol.maxAttempts;
  const availableAt = retry ? now + store.protocol.backoffSeconds(attempts) : now;
  const detail =
    failure.detail ??
    (failure.kind === 'temporary'
      ? 'temporary failure reported by the worker'
      : 'permanent failure reported by the worker');
  const state = retry ? 'ready' : 'dead';
  const changed = await x.changes(settleFailure, {
    state,
    availableAt,
    code: failure.code,
    detail: detail.slice(0, 500),
    now,
    id: lease.eventId,
    generation: lease.generation,
  });
  if (changed !== 1) {
    throw new LeaseLostError(
      lease.eventId,
      lease.generation,
      'the fenced failure update matched no row (state, generation or lease changed); rolled back',
    );
  }
  return { state, availableAt };
}

/**
 * dead → ready for a new cycle: attempts reset to 0, generation and payload kept. A
 * pruned dead message (no payload) is never redriven.
 */
export async function toRedriven(
  trx: Transaction<Database>,
  eventIds: readonly string[] | 'all',
  now: number,
): Promise<string[]> {
  let query = trx
    .updateTable('messages')
    .set({ state: 'ready', attempts: 0, available_at: now, lease_until: null, updated_at: now })
    .where('state', '=', stateLiteral('dead'))
    .where('pruned_at', 'is', null);
  if (eventIds !== 'all') query = query.where('event_id', 'in', eventIds);
  const rows = await query.returning('event_id').execute();
  return rows.map((r) => r.event_id).sort();
}

// ---------------------------------------------------------------------------
// The service's transitions (issue 10): lease extension, release, worker wake-up.
// Both fenced in SQL exactly like the ACK: state `leased`, same generation, lease not
// run out at `now`; the caller counts the rows and zero means the lease was lost.

/** leased → leased with `lease_until = now + seconds`: the worker's heartbeat. */
const extendLease = defineStatement('extend', ({ db, p }) =>
  db
    .updateTable('messages')
    .set({ lease_until: p.value<number>('leaseUntil'), updated_at: p.value<number>('now') })
    .where('event_id', '=', p.value<string>('id'))
    .where('generation', '=', p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', p.value<number>('now')),
);

/** Extends one lease to `leaseUntil`; returns the rows changed (0 = the lease is lost). */
export function toExtended(
  x: Executor,
  lease: LeaseRef,
  now: number,
  leaseUntil: number,
): Promise<number> {
  return x.changes(extendLease, {
    id: lease.eventId,
    generation: lease.generation,
    now,
    leaseUntil,
  });
}

/**
 * leased → ready, available now, the claim's attempt given back (`attempts - 1`, never
 * below 0). `generation` stays where the claim put it: the releasing holder (or anyone
 * with its token) can never ACK, and the next claim issues a newer generation.
 */
const releaseLease = defineStatement('release', ({ db, p }) =>
  db
    .updateTable('messages')
    .set((eb) => ({
      state: stateLiteral('ready'),
      available_at: p.value<number>('now'),
      lease_until: null,
      attempts: eb
        .case()
        .when('attempts', '>', 0)
        .then(eb('attempts', '-', 1))
        .else(0)
        .end(),
      updated_at: p.value<number>('now'),
    }))
    .where('event_id', '=', p.value<string>('id'))
    .where('generation', '=', p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', p.value<number>('now')),
);

/** Releases one lease; returns the rows changed (0 = the lease is lost). */
export function toReleased(x: Executor, lease: LeaseRef, now: number): Promise<number> {
  return x.changes(releaseLease, { id: lease.eventId, generation: lease.generation, now });
}

/** The PostgreSQL channel a long-running worker LISTENs on; the payload is the schema. */
export const WAKE_CHANNEL = 'onceq_wake';

/**
 * `NOTIFY` in the caller's transaction (PostgreSQL delivers it at COMMIT, never on
 * rollback): enqueue and redrive wake sleeping workers of this schema at once.
 */
const notifyWake = defineStatement(
  'notify-wake',
  () => sql`SELECT pg_notify(${sql.lit(WAKE_CHANNEL)}, current_schema())`,
);

/** Wakes LISTENing workers where the backend has notifications; a no-op elsewhere. */
export async function notifyWorkers(
  store: Store,
  via: Executor | Transaction<Database>,
): Promise<void> {
  if (store.listen === undefined) return;
  if ('rows' in via) await via.rows(notifyWake, {});
  else await sql`SELECT pg_notify(${sql.lit(WAKE_CHANNEL)}, current_schema())`.execute(via);
}
