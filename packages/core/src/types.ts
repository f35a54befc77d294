import type { Effect } from './handler/contract.ts';
import type { JsonObject } from './input/json-value.ts';
import type { OnDead } from './policy.ts';
import type { FailureKind, LESSON_STATES, MessageState } from './states.ts';

/** Protocol knobs. Defaults come from docs/protocol.md §5. */
export interface ProtocolOptions {
  /** Claims a message may get in one cycle before it goes dead. Default 3. */
  maxAttempts: number;
  /** Lease length in seconds. Default 30. */
  leaseSeconds: number;
  /** Delay before retry number `attempt + 1`, after `attempt` claims. Default 2^(attempt-1): 1 s, then 2 s. */
  backoffSeconds: (attempt: number) => number;
  /** What a dead message does to its ordering key (docs/ordering.md). Default `block`. */
  onDead: OnDead;
}

export const DEFAULT_PROTOCOL: ProtocolOptions = Object.freeze({
  maxAttempts: 3,
  leaseSeconds: 30,
  backoffSeconds: (attempt: number) => 2 ** Math.max(0, attempt - 1),
  onDead: 'block',
});

/** What fences a completion: the message and the generation its claim received. */
export interface LeaseRef {
  readonly eventId: string;
  readonly generation: number;
}

/**
 * The right to process one message, identified by `(eventId, generation)`.
 * Immutable: apply and fail are fenced on these values in SQL.
 */
export interface Lease extends LeaseRef {
  /** Which claim of the current cycle this is, 1-based (= attempts after the claim). */
  readonly attempt: number;
  /** Unix seconds; the lease is valid while `now < leaseUntil`. */
  readonly leaseUntil: number;
  /** Canonical payload text as claimed. For display only: apply re-reads the stored payload. */
  readonly payload: string;
  /** When the message became claimable (enqueue, end of backoff, redrive): the claim time minus this is its queue wait. */
  readonly availableAt: number;
}

export interface EnqueueResult {
  accepted: number;
  duplicates: number;
}

/**
 * What `complete` (and `apply`) recorded for one message: done with the money effect, or
 * with a completion of the handler's own (`effect: null`, its summary), or a failure.
 */
export type ApplyOutcome =
  | { eventId: string; outcome: 'done'; effect: Effect }
  | { eventId: string; outcome: 'done'; effect: null; summary: string | null }
  | { eventId: string; outcome: 'dead'; code: string; detail: string }
  | { eventId: string; outcome: 'retry'; code: string; detail: string; availableAt: number };

export interface FailInput {
  kind: FailureKind;
  code: string;
  detail?: string;
}

/** One stored message as `show` and `dlq` report it. */
export interface MessageView {
  eventId: string;
  /** `null` once `onceq prune` removed it: see {@link MessageView.prunedAt}. */
  payload: JsonObject | null;
  /** Canonical payload text; `null` once pruned. */
  payloadText: string | null;
  state: MessageState;
  attempts: number;
  generation: number;
  availableAt: number;
  leaseUntil: number | null;
  lastErrorCode: string | null;
  lastErrorDetail: string | null;
  enqueuedAt: number;
  updatedAt: number;
  /** The money effect of a done message, else `null`. */
  effect: Effect | null;
  /** A done message a completion of the handler's own handled: its recorded summary; else `null`. */
  completion: { summary: string | null } | null;
  /** When the payload was pruned (only `done`/`dead` messages), else `null`. */
  prunedAt: number | null;
  /** Hex SHA-256 of the pruned canonical payload (what dedup compares), else `null`. */
  payloadSha256: string | null;
  /** The message's ordering key (docs/ordering.md), else `null`. */
  key: string | null;
  /** The queue the message belongs to (`default` unless named). */
  queue: string;
}

/**
 * Messages by state: the lesson's four always; `waiting` and `skipped` (ordering keys,
 * docs/ordering.md) once the store has held a message in them.
 */
export type StateCounts = Record<(typeof LESSON_STATES)[number], number> &
  Partial<Record<MessageState, number>>;

export interface StatusReport {
  messages: StateCounts;
  effects: number;
  totals: Record<string, number>;
  total: number;
}
