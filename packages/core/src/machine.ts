/**
 * The state machine of a message, with no backend in it: which transition is legal from
 * which state, the lease fence as JavaScript sees it, the attempt limit and the backoff
 * (docs/protocol.md §5). Both statement modules (backend/sqlite/statements.ts,
 * backend/postgres/statements.ts) write what this module decides, and the protocol
 * modules ask it; no SQL lives here.
 */
import type { MessageState } from './states.ts';
import type { FailInput, LeaseRef, ProtocolOptions } from './types.ts';

/** Every move a message can make, by the operation that makes it. */
export const TRANSITIONS = Object.freeze({
  /** ready → leased: the claim (attempts + 1, generation + 1, a lease). */
  claim: { from: 'ready', to: ['leased'] },
  /** leased → done with its effect row, fenced on state, generation and lease. */
  ack: { from: 'leased', to: ['done'] },
  /** leased → ready after backoff, or → dead (permanent, or the last attempt). */
  fail: { from: 'leased', to: ['ready', 'dead'] },
  /** leased (lease ran out) → ready at its `lease_until`, or → dead on the last attempt. */
  recover: { from: 'leased', to: ['ready', 'dead'] },
  /** leased → leased with a later `lease_until` (the heartbeat), fenced like the ACK. */
  extend: { from: 'leased', to: ['leased'] },
  /** leased → ready now, the claim's attempt given back, fenced like the ACK. */
  release: { from: 'leased', to: ['ready'] },
  /** dead → ready for a new cycle: attempts reset, generation and payload kept. */
  redrive: { from: 'dead', to: ['ready'] },
  /** dead → skipped on purpose: final, never done; releases the message's ordering key. */
  skip: { from: 'dead', to: ['skipped'] },
  /**
   * waiting → ready: the key's next message, in the transaction that made the one before
   * it done or skipped (docs/ordering.md).
   */
  releaseKey: { from: 'waiting', to: ['ready'] },
} as const satisfies Record<string, { from: MessageState; to: readonly MessageState[] }>);

export type TransitionName = keyof typeof TRANSITIONS;

/**
 * The states enqueue writes: `ready`, or `waiting` for a keyed message behind an
 * unfinished one of its key.
 */
export const ENQUEUED_STATES = ['ready', 'waiting'] as const satisfies readonly MessageState[];

/** The `last_error_detail` lazy recovery writes while the cycle has attempts left. */
export const RECOVERED_DETAIL = 'the lease expired before an ACK; retried';
/** The `last_error_detail` lazy recovery writes when the expired claim was the last attempt. */
export const RECOVERED_DEAD_DETAIL = 'the lease expired before an ACK on the last attempt';
/** The `last_error_code` of a lazily recovered message. */
export const LEASE_EXPIRED = 'lease_expired';

/**
 * Why `lease` is no longer valid for `row` at `now`, or null when it still holds: the
 * JavaScript half of the fence (the SQL `WHERE` of every fenced statement is the other,
 * and the one that counts). A lease holds while the message is `leased` at exactly the
 * lease's generation and `now < lease_until`.
 */
export function fenceViolation(
  row: { state: string; generation: number; lease_until: number | null } | undefined,
  lease: LeaseRef,
  now: number,
): string | null {
  if (row === undefined) return 'no such message';
  const generation = Number(row.generation);
  if (generation > lease.generation) {
    return `the message is at generation ${generation}, a newer claim owns it`;
  }
  if (generation < lease.generation) {
    return `generation ${lease.generation} was never issued (the message is at generation ${generation})`;
  }
  if (row.state !== 'leased') return `the message is ${row.state}, not leased`;
  if (now >= Number(row.lease_until)) return `the lease expired at ${row.lease_until} (now ${now})`;
  return null;
}

/** What a failure writes: the next state, when it is claimable again, and the error. */
export interface FailureMove {
  state: 'ready' | 'dead';
  /** `now + backoff` for a retry; for a dead message, the time it died. */
  availableAt: number;
  code: string;
  /** At most 500 characters (the column's CHECK). */
  detail: string;
}

/**
 * Where a failure sends a leased message that has been claimed `attempts` times in this
 * cycle: a temporary failure with attempts left → `ready` after
 * `protocol.backoffSeconds(attempts)` (1 s, then 2 s by default); a permanent failure or
 * the last attempt (`protocol.maxAttempts`, default 3) → `dead`.
 */
export function afterFailure(
  protocol: ProtocolOptions,
  attempts: number,
  failure: FailInput,
  now: number,
): FailureMove {
  const retry = failure.kind === 'temporary' && attempts < protocol.maxAttempts;
  const detail =
    failure.detail ??
    (failure.kind === 'temporary'
      ? 'temporary failure reported by the worker'
      : 'permanent failure reported by the worker');
  return {
    state: retry ? 'ready' : 'dead',
    availableAt: retry ? now + protocol.backoffSeconds(attempts) : now,
    code: failure.code,
    detail: detail.slice(0, 500),
  };
}

/**
 * Claim order, `(available_at, event_id)`: the order claims pick in, restored on the
 * returned rows because `UPDATE … RETURNING` promises none. Sorts in place.
 */
export function inClaimOrder<R extends { available_at: number; event_id: string }>(rows: R[]): R[] {
  return rows.sort((a, b) =>
    a.available_at === b.available_at
      ? a.event_id < b.event_id
        ? -1
        : 1
      : Number(a.available_at) - Number(b.available_at),
  );
}
