/**
 * The one seam between the protocol and a backend's SQL: every read and write the
 * protocol makes on `messages` and `effects`, as named operations (River's driver
 * interface). Each backend implements it once, in `backend/sqlite/statements.ts` and
 * `backend/postgres/statements.ts`; the protocol modules call it and read no backend
 * flag. Every write of `messages.state` goes through it, and every move out of `leased`
 * is fenced in its SQL `WHERE` (state `leased`, the lease's generation,
 * `lease_until > now`) and reports how many rows it changed: zero means the lease is lost.
 *
 * What the backends do differently, and why: docs/architecture.md ("Where the SQL lives").
 */

import type { FailureMove } from '../machine.ts';
import type { MessageState } from '../states.ts';
import type { Effect, LeaseRef } from '../types.ts';
import type { Store } from './backend.ts';
import type { Executor } from './prepared.ts';

/** The columns a claim returns, in claim order. */
export interface ClaimedRow {
  event_id: string;
  generation: number;
  attempts: number;
  lease_until: number;
  payload: string;
  available_at: number;
}

/** The columns apply, fail and the lease service read under the fence. */
export interface FencedRow {
  event_id: string;
  payload: string;
  state: MessageState;
  generation: number;
  attempts: number;
  lease_until: number | null;
}

/** What a claim needs to know. */
export interface ClaimInput {
  /** The claim's clock reading: leases that ran out by now are recovered first. */
  now: number;
  /** At most this many messages. */
  limit: number;
  leaseSeconds: number;
  /** The cycle's attempt budget: an expired lease on the last attempt goes dead. */
  maxAttempts: number;
}

/** A message whose handler succeeded, and the effect to record with its ACK. */
export interface Success {
  lease: LeaseRef;
  effect: Effect;
}

/** What {@link Statements.settleAlone} writes: an effect with its ACK, or a failure move. */
export type SettleWrite = { effect: Effect; createdAt: number } | { move: FailureMove };

/** A stored message as enqueue's duplicate check sees it. */
export interface StoredForEnqueue {
  event_id: string;
  payload: string | null;
  payload_sha256: string | null;
  pruned_at: number | null;
}

/** A message as redrive's check sees it. */
export interface StoredForRedrive {
  event_id: string;
  state: MessageState;
  pruned_at: number | null;
}

/** One row of {@link Statements.snapshot}: a count by state, a category's effects, or a head. */
export interface SnapshotRow {
  kind: 'state' | 'effect' | 'ready' | 'due' | 'dead';
  k: string | null;
  n: unknown;
  v: unknown;
}

/** One backend's implementation of every operation the protocol runs. */
export interface Statements {
  /**
   * Lazy recovery, then ready → leased for up to `limit` rows, inside the caller's write
   * transaction `x`. Recovery first (§5): a leased row whose lease ran out by `now` goes
   * back to `ready` at its `lease_until` (or `dead` on the last attempt) and is claimable
   * in this very claim. The picked rows get `attempts + 1`, `generation + 1`,
   * `lease_until = now + leaseSeconds`. Returns them in claim order.
   */
  claim(x: Executor, input: ClaimInput): Promise<ClaimedRow[]>;
  /**
   * {@link claim} as a transaction of its own, reading the clock inside it: the hot path
   * of `claim` and `work`. (PostgreSQL: one statement that commits by itself.)
   */
  claimAlone(store: Store, input: Omit<ClaimInput, 'now'>): Promise<ClaimedRow[]>;
  /**
   * Reads the named messages for apply, fail and the lease service, in the caller's
   * write transaction; a missing id has no row. The rows stay locked until COMMIT where
   * concurrent writers exist (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE`
   * already holds the one write lock).
   */
  readFenced(x: Executor, leases: readonly LeaseRef[]): Promise<FencedRow[]>;
  /**
   * leased → done for every `(event_id, generation)` still validly leased at `now`, no
   * effect rows: the plain fenced ACK. Returns the rows it changed.
   */
  ack(x: Executor, leases: readonly LeaseRef[], now: number): Promise<number>;
  /**
   * The effect rows (stamped `createdAt`) and the fenced ACK of `succeeded`, in the
   * caller's transaction. `secondCheck` reads the clock again after the handler and
   * throws when a lease ran out meanwhile; the ACK is fenced at the time it returns.
   * Returns how many messages it marked done: the caller rolls back (effects included)
   * unless that is all of them. Fires the `after-effect-insert` crash point once the
   * effect rows are in.
   */
  ackWithEffects(
    x: Executor,
    succeeded: readonly Success[],
    createdAt: number,
    secondCheck: () => number,
  ): Promise<number>;
  /**
   * One handler result recorded as a transaction of its own, with no read in front:
   * the effect row (stamped `createdAt`) and the fenced ACK, or the fenced failure
   * `move`, at `now`. Returns the rows changed: 1, or 0 when the lease no longer holds
   * (state, generation or `lease_until > now`), and then nothing was written, effect
   * included. Fires `after-effect-insert` (for an effect) and `after-ack` once written
   * (PostgreSQL: one statement that commits by itself, so both fire after it).
   */
  settleAlone(store: Store, lease: LeaseRef, write: SettleWrite, now: number): Promise<number>;
  /**
   * The effect rows (stamped `createdAt`) and the fenced ACK of many handler successes as
   * a transaction of its own, with no read in front: each message fenced on its own
   * (state `leased`, its generation, `lease_until > now`), an effect row only for a
   * message it marked done. Returns the ids it marked done; the others' leases are lost
   * and nothing of them was written. Fires `after-effect-insert` and `after-ack` once
   * written. Only where one statement does it all (PostgreSQL); a backend without it
   * records a batch with a fence read ({@link ackWithEffects} in a transaction).
   */
  ackManyAlone?(
    store: Store,
    succeeded: readonly Success[],
    createdAt: number,
    now: number,
  ): Promise<string[]>;
  /**
   * leased → `move.state` for one lease, fenced on its generation and `now`, writing
   * `move`'s availability and error. Returns the rows it changed (0 = the lease is lost).
   */
  fail(x: Executor, lease: LeaseRef, move: FailureMove, now: number): Promise<number>;
  /** leased → leased until `leaseUntil`, fenced at `now`. Returns the rows changed. */
  extend(x: Executor, lease: LeaseRef, now: number, leaseUntil: number): Promise<number>;
  /**
   * leased → ready now, the claim's attempt given back (never below 0), generation kept,
   * fenced at `now`. Returns the rows changed.
   */
  release(x: Executor, lease: LeaseRef, now: number): Promise<number>;
  /**
   * The named messages for redrive's check, locked until COMMIT like
   * {@link readFenced}, so a concurrent redrive waits and then sees what this one did.
   */
  readForRedrive(x: Executor, ids: readonly string[]): Promise<StoredForRedrive[]>;
  /**
   * dead → ready for the named (or all) dead messages: attempts 0, available `now`,
   * generation and payload kept; a pruned message is never moved. Returns the ids moved,
   * sorted.
   */
  redrive(x: Executor, ids: readonly string[] | 'all', now: number): Promise<string[]>;
  /** The stored rows of `ids` (any state) for enqueue's duplicate and conflict check. */
  lookupForEnqueue(x: Executor, ids: readonly string[]): Promise<StoredForEnqueue[]>;
  /**
   * New messages, `ready` at `now`, attempts and generation 0, in the caller's
   * transaction. An id already stored (committed, or inserted earlier in this
   * transaction) is skipped, not an error; returns how many rows were inserted.
   */
  insertMessages(
    x: Executor,
    rows: readonly { eventId: string; payload: string }[],
    now: number,
  ): Promise<number>;
  /**
   * Wakes sleeping workers of this store when the caller's transaction commits
   * (PostgreSQL `NOTIFY`, never delivered on rollback); nothing where workers poll.
   */
  wake(x: Executor): Promise<void>;
  /**
   * What `status` shows, read by **one statement** (one snapshot, so `done` and the
   * effects never disagree): the maintained counters of `onceq_counts` by state and by
   * effect category (migration 0004), the oldest `available_at` of a message claimable
   * at `now`, and the oldest `updated_at` of a dead one.
   */
  snapshot(store: Store, now: number): Promise<SnapshotRow[]>;
}
