import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Store } from './backend/backend.ts';
import { defineStatement, type Executor } from './backend/prepared.ts';
import type { Database } from './schema.ts';
import type { MessageState } from './states.ts';
import type { FailInput, LeaseRef } from './types.ts';

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

export async function toLeased(x: Executor, now: number, limit: number, leaseSeconds: number) {
  const rows = await x.rows(claimRows, { now, leaseUntil: now + leaseSeconds }, limit);
  // RETURNING order is not guaranteed: restore claim order.
  return rows.sort((a, b) =>
    a.available_at === b.available_at
      ? a.event_id < b.event_id
        ? -1
        : 1
      : Number(a.available_at) - Number(b.available_at),
  );
}

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left, else to `dead` with `lease_expired`.
 */
const recover = defineStatement('recover', ({ db, p }) =>
  db
    .updateTable('messages')
    .set((eb) => {
      const retry = eb('attempts', '<', p.value<number>('maxAttempts'));
      return {
        state: eb.case().when(retry).then(stateLiteral('ready')).else(stateLiteral('dead')).end(),
        available_at: eb
          .case()
          .when(retry)
          .then(eb.ref('lease_until').$castTo<number>())
          .else(eb.ref('available_at'))
          .end(),
        lease_until: null,
        last_error_code: 'lease_expired',
        last_error_detail: eb
          .case()
          .when(retry)
          .then('the lease expired before an ACK; retried')
          .else('the lease expired before an ACK on the last attempt')
          .end(),
        updated_at: p.value<number>('now'),
      };
    })
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '<=', p.value<number>('now')),
);

export async function recoverExpired(store: Store, x: Executor, now: number): Promise<void> {
  await x.changes(recover, { now, maxAttempts: store.protocol.maxAttempts });
}

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

export function readForFence(x: Executor, leases: readonly LeaseRef[]): Promise<FencedRow[]> {
  return x.rows(readFenced, { ids: leases.map((l) => l.eventId) }, leases.length);
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
  if (changed !== 1) throw new FenceMiss(lease.eventId);
  return { state, availableAt };
}

/** dead → ready for a new cycle: attempts reset to 0, generation and payload kept. */
export async function toRedriven(
  trx: Transaction<Database>,
  eventIds: readonly string[] | 'all',
  now: number,
): Promise<string[]> {
  let query = trx
    .updateTable('messages')
    .set({ state: 'ready', attempts: 0, available_at: now, lease_until: null, updated_at: now })
    .where('state', '=', stateLiteral('dead'));
  if (eventIds !== 'all') query = query.where('event_id', 'in', eventIds);
  const rows = await query.returning('event_id').execute();
  return rows.map((r) => r.event_id).sort();
}

/** A fenced write matched no row although the fence had just been checked: abort the transaction. */
export class FenceMiss extends Error {
  constructor(eventId: string) {
    super(`fenced update of ${eventId} matched no row`);
  }
}
