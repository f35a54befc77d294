import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Store } from './backend/backend.ts';
import type { Database, MessagesTable } from './schema.ts';
import type { MessageState } from './states.ts';
import type { FailInput, LeaseRef } from './types.ts';

/**
 * The only code that writes `messages.state`. Every transition out of `leased` is
 * fenced in its SQL `WHERE` on state, generation and lease, and reports how many rows
 * it changed: zero means the caller lost the lease.
 */

type Trx = Transaction<Database>;

/**
 * A state as an SQL literal, not a bound parameter: the partial indexes
 * (`… WHERE state = 'ready'`) are only usable when the query repeats their condition
 * literally. With `state = ?` SQLite scans and sorts every ready row on each claim.
 */
export function stateLiteral(state: MessageState): RawBuilder<MessageState> {
  return sql.lit(state);
}

/** ready → leased for up to `limit` claimable rows, oldest `(available_at, event_id)` first. */
export async function toLeased(
  store: Store,
  trx: Trx,
  now: number,
  limit: number,
  leaseSeconds: number,
) {
  let pick = trx
    .selectFrom('messages')
    .select('event_id')
    .where('state', '=', stateLiteral('ready'))
    .where('available_at', '<=', now)
    .orderBy('available_at')
    .orderBy('event_id')
    .limit(limit);
  // PostgreSQL: concurrent claimers skip each other's rows instead of waiting.
  if (store.capabilities.skipLocked) pick = pick.forUpdate().skipLocked();
  const rows = await trx
    .updateTable('messages')
    .set((eb) => ({
      state: 'leased',
      attempts: eb('attempts', '+', 1),
      generation: eb('generation', '+', 1),
      lease_until: now + leaseSeconds,
      updated_at: now,
    }))
    // By primary key: the subquery already holds the rows (write lock or row locks).
    .where('event_id', 'in', pick)
    .returning(['event_id', 'generation', 'attempts', 'lease_until', 'payload', 'available_at'])
    .execute();
  return rows.sort((a, b) =>
    a.available_at === b.available_at
      ? a.event_id < b.event_id
        ? -1
        : 1
      : a.available_at - b.available_at,
  );
}

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left, else to `dead` with `lease_expired`.
 */
export async function recoverExpired(store: Store, trx: Trx, now: number): Promise<void> {
  const max = store.protocol.maxAttempts;
  await trx
    .updateTable('messages')
    .set((eb) => ({
      state: eb
        .case()
        .when('attempts', '<', max)
        .then('ready' as MessageState)
        .else('dead' as MessageState)
        .end(),
      available_at: eb
        .case()
        .when('attempts', '<', max)
        .then(eb.ref('lease_until').$castTo<number>())
        .else(eb.ref('available_at'))
        .end(),
      lease_until: null,
      last_error_code: 'lease_expired',
      last_error_detail: eb
        .case()
        .when('attempts', '<', max)
        .then('the lease expired before an ACK; retried')
        .else(`the lease expired before an ACK on attempt ${max} of ${max}`)
        .end(),
      updated_at: now,
    }))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '<=', now)
    .execute();
}

/** leased → done for every `(event_id, generation)` pair still validly leased at `now`. */
export async function toDone(trx: Trx, leases: readonly LeaseRef[], now: number): Promise<number> {
  if (leases.length === 0) return 0;
  const result = await trx
    .updateTable('messages')
    .set({ state: 'done', lease_until: null, updated_at: now })
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', now)
    .where(
      'event_id',
      'in',
      leases.map((l) => l.eventId),
    )
    .where((eb) =>
      eb.or(
        leases.map((l) =>
          eb.and([eb('event_id', '=', l.eventId), eb('generation', '=', l.generation)]),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * leased → ready (temporary failure with attempts left, after backoff) or → dead
 * (permanent failure, or the last attempt failed). `attempts` is the row's current value,
 * read under the same fence.
 */
export async function toFailed(
  store: Store,
  trx: Trx,
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
  const set: Partial<MessagesTable> = {
    state: retry ? 'ready' : 'dead',
    lease_until: null,
    last_error_code: failure.code,
    last_error_detail: detail.slice(0, 500),
    updated_at: now,
  };
  if (retry) set.available_at = availableAt;
  const result = await trx
    .updateTable('messages')
    .set(set)
    .where('event_id', '=', lease.eventId)
    .where('generation', '=', lease.generation)
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', now)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new FenceMiss(lease.eventId);
  return { state: retry ? 'ready' : 'dead', availableAt };
}

/** dead → ready for a new cycle: attempts reset to 0, generation and payload kept. */
export async function toRedriven(
  trx: Trx,
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
