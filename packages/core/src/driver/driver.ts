/**
 * The one seam between onceq and a backend's SQL (River's driver interface): every
 * statement onceq runs whose SQL a backend writes, as named operations on an
 * {@link Executor} (the caller's transaction, or none), and the backend's facts as plain
 * data ({@link Capabilities}). Each backend implements it once, as one object
 * (`sqlite/statements.ts`, `postgres/statements.ts`); the modules in `queue/`,
 * `worker/` and `maintenance/` call `store.driver` and read no backend kind.
 *
 * Every write of `messages.state` goes through it, and every move out of `leased` is
 * fenced in its SQL `WHERE` (state `leased`, the lease's generation, `lease_until > now`)
 * and reports how many rows it changed: zero means the lease is lost.
 *
 * SQL the two backends share word for word (counts, the invariants, prune's pages, the
 * lists) is written once, in `driver/sql/*.ts` and `driver/shared-statements.ts`.
 * What the backends do differently, and why: docs/architecture.md ("Where the SQL lives").
 */

import type { CheckedCompletion } from '../handler/run.ts';
import type { FailureMove } from '../machine.ts';
import type { ConnectionCount, Finding } from '../maintenance/doctor-types.ts';
import type { OnDead } from '../policy.ts';
import type { MessageState } from '../states.ts';
import type { LeaseRef } from '../types.ts';
import type { Executor, StatementRunner } from './executor.ts';
import type { CounterRow, StorageCounts } from './sql/counters.ts';
import type { DeadSelection } from './sql/dead-selection.ts';
import type { ListPage, MessageFilter, MessageRow, PreviewRow, WaitingRow } from './sql/inspect.ts';
import type { InvariantCheck } from './sql/invariants.ts';
import type { BlockedKeyRow, KeyPosition, KeyTail, ReleasedDeadRow } from './sql/ordering.ts';

/** The finished states prune touches. */
export type PrunableState = Extract<MessageState, 'done' | 'dead'>;

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
  /** The queue claimed from: its ready messages, and its expired leases recovered. */
  queue: string;
  /** Stamped on every claimed message: what it does to its ordering key if it dies. */
  onDead: OnDead;
}

/**
 * One message's result as {@link Driver.complete} writes it, fenced on its lease: a
 * completion (the ACK with its rows, the money effect's `effects` row included, and an
 * optional `write(tx)`), or a failure move. The move is a function of the time the write
 * reads (its backoff starts then).
 */
export type CompletionWrite =
  | {
      readonly lease: LeaseRef;
      readonly completion: CheckedCompletion;
      /** The failure to record instead when `completion.write` throws. */
      readonly failed: (error: unknown, now: number) => FailureMove;
    }
  | { readonly lease: LeaseRef; readonly failure: (now: number) => FailureMove };

/** How {@link Driver.complete} writes. */
export interface CompleteOptions {
  /**
   * Write inside one explicit transaction even where the backend could commit the batch
   * with one statement of its own (PostgreSQL), so the rows exist, before COMMIT, in a
   * transaction a crash rolls back (crash point `after-effect-insert`). `apply` asks for
   * it: it shows §5's one write transaction. Default false.
   */
  readonly explicitTransaction?: boolean;
  /**
   * Claim the next messages in the same commit as the write, for every kind of write on
   * every backend: the result template's trailing claim (SQLite: the claim's statements
   * after the write, in its transaction; PostgreSQL: the claim's steps in the very
   * statement, or the transaction's last statement where a `write(tx)` needs one). The
   * claim is then in {@link CompleteReport.claimed}. Default: no claim.
   */
  readonly claimNext?: Omit<ClaimInput, 'now'>;
}

/** What {@link Driver.complete} wrote. */
export interface CompleteReport {
  /** The clock reading the fence used. */
  readonly now: number;
  /**
   * Every message whose fenced write matched its row, by event id: `null` for done, the
   * move for a failure (a completion whose write threw included). A message missing here
   * lost its lease, and nothing of it was written.
   */
  readonly written: Map<string, FailureMove | null>;
  /**
   * What {@link CompleteOptions.claimNext} claimed, in claim order: always defined when
   * `claimNext` was given, undefined when it was not.
   */
  readonly claimed?: ClaimedRow[];
}

/** A stored message as enqueue's duplicate check sees it. */
export interface StoredForEnqueue {
  event_id: string;
  payload: string | null;
  payload_sha256: string | null;
  pruned_at: number | null;
  ordering_key: string | null;
  queue: string;
}

/**
 * When new messages become claimable: at `max(now + seconds, at)`, the statement's now
 * (on PostgreSQL the server's clock). None: now.
 */
export interface EnqueueDelay {
  readonly seconds: number;
  readonly at: number;
}

/**
 * A new message as enqueue stores it. Without a key it is `ready`; with one, enqueue
 * gives its position in the key and whether it is the key's head (`ready`) or held
 * behind it (`waiting`), decided under the key's lock (docs/ordering.md).
 */
export interface NewMessage {
  readonly eventId: string;
  readonly payload: string;
  readonly ordering?: {
    readonly name: string;
    readonly seq: number;
    readonly state: 'ready' | 'waiting';
  };
}

/** A message as redrive's check sees it. */
export interface StoredForRedrive {
  event_id: string;
  state: MessageState;
  pruned_at: number | null;
}

/** One row of {@link Driver.snapshot}: a count by state, a category's effects, or a head. */
export interface SnapshotRow {
  kind: 'state' | 'effect' | 'ready' | 'due' | 'dead';
  k: string | null;
  n: unknown;
  v: unknown;
}

/**
 * One schema object as the doctor compares it, keyed `kind name`: the table it belongs to
 * (a table or view: itself; a column, constraint, index or trigger: its table) and its
 * normalized definition.
 */
export type SchemaMap = Map<string, { readonly table: string; readonly definition: string }>;

/** A check of the doctor's that only some backends have (it names itself in the report). */
export interface DoctorProbe {
  /** The check's stable name in the report, e.g. `integrity_check`. */
  readonly name: string;
  run(x: Executor, options: ProbeOptions): Promise<Finding[]>;
}

export interface ProbeOptions {
  /** Repair what is safe to repair (see `DoctorOptions.fix`). */
  readonly fix: boolean;
  /** See `DoctorOptions.statisticsMinRows`. */
  readonly statisticsMinRows: number;
}

/** One backend's implementation of every statement onceq runs, and its facts. */
export interface Driver {
  /** Facts of the backend, as plain data: callers read these, never the backend's kind. */
  readonly capabilities: Capabilities;

  /**
   * Lazy recovery, then ready → leased for up to `limit` rows, inside the caller's write
   * transaction `x`. Recovery first (§5): a leased row whose lease ran out by `now` goes
   * back to `ready` at its `lease_until` (or `dead` on the last attempt) and is claimable
   * in this very claim. The picked rows get `attempts + 1`, `generation + 1`,
   * `lease_until = now + leaseSeconds`. Returns them in claim order. (The `claim --hold`
   * lab: it holds the transaction open before COMMIT.)
   */
  claimInTransaction(x: Executor, input: ClaimInput): Promise<ClaimedRow[]>;
  /**
   * {@link claimInTransaction} as a transaction of its own, reading the clock inside it:
   * the hot path of `claim` and every worker. (PostgreSQL: one statement that commits by
   * itself.)
   */
  claim(store: StatementRunner, input: Omit<ClaimInput, 'now'>): Promise<ClaimedRow[]>;
  /**
   * Reads the named messages for apply, fail and the lease service, in the caller's
   * write transaction; a missing id has no row. The rows stay locked until COMMIT where
   * concurrent writers exist (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE`
   * already holds the one write lock).
   */
  readFenced(x: Executor, leases: readonly LeaseRef[]): Promise<FencedRow[]>;
  /**
   * THE completion write (River's "set state if running, many"), by the backend's one
   * result template (completion-write.ts): every write of `writes` fenced in its SQL
   * `WHERE` (state `leased`, the lease's generation, `lease_until > now`, `now` read by
   * the backend at the write), with no read in front, the failures, the counters, each
   * table's rows joined to the ACKs that matched, and the optional trailing claim. A
   * message whose fence does not match writes nothing at all (no effect row, no record,
   * no user rows). A completion's `write(tx)` runs after its message's fenced ACK matched,
   * in the same transaction (one savepoint for the batch, one per message only after a
   * write threw): when it throws, that message's rows are rolled back and its failure is
   * written instead, and the other messages stay. Crash points: `after-effect-insert`
   * once a money effect's rows are in, `after-completion-write` once a handler's own
   * completion's rows are in and after its `write(tx)`, `after-ack` once everything is
   * written (before COMMIT where the writes share a transaction; on PostgreSQL a batch
   * without `write(tx)` is one statement that has committed by then). Throws when the
   * database refuses the write; then nothing of `writes` was written.
   */
  complete(
    store: StatementRunner,
    writes: readonly CompletionWrite[],
    options?: CompleteOptions,
  ): Promise<CompleteReport>;
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
   * dead → ready for the selected dead messages (named, all, or all of a queue): attempts 0, available `now`,
   * generation and payload kept; a pruned message is never moved. Returns the ids moved,
   * sorted.
   */
  redrive(x: Executor, selection: DeadSelection, now: number): Promise<string[]>;
  /** The stored rows of `ids` (any state) for enqueue's duplicate and conflict check. */
  lookupForEnqueue(x: Executor, ids: readonly string[]): Promise<StoredForEnqueue[]>;
  /**
   * New messages of `queue` (default `default`), `ready` at `now`, attempts and
   * generation 0, in the caller's transaction. An id already stored (committed, or
   * inserted earlier in this transaction) is skipped, not an error; returns how many rows
   * were inserted.
   */
  insertMessages(
    x: Executor,
    rows: readonly NewMessage[],
    now: number,
    delay?: EnqueueDelay,
    queue?: string,
  ): Promise<number>;
  /**
   * Holds the named ordering keys (each `queue/key`, see `keyLockName` in queues.ts) until the
   * caller's transaction ends, in the order given (callers sort them): an enqueue deciding which of its messages head their key
   * and the release of a key's next message (migration 0008's trigger) never
   * interleave. PostgreSQL: transaction-scoped advisory locks; SQLite: nothing, its
   * write lock already serialises them.
   */
  lockKeys(x: Executor, keys: readonly string[]): Promise<void>;
  /** The last message (highest `seq`) of each of `keys` of `queue` that has one. */
  keyTails(x: Executor, keys: readonly string[], queue: string): Promise<KeyTail[]>;
  /**
   * Records the positions of an enqueue's new keyed messages of `queue` where they live
   * apart from the messages (PostgreSQL's `message_keys`); SQLite's rows carry them.
   */
  insertKeyPositions(x: Executor, queue: string, positions: readonly KeyPosition[]): Promise<void>;
  /**
   * The dead messages among `ids` (or all) that released their key when they died
   * (`on_dead = 'skip'`), by key and position: a redrive puts each back at its key's end.
   */
  releasedDead(x: Executor, selection: DeadSelection): Promise<ReleasedDeadRow[]>;
  /**
   * Puts one such message back at its key's end, holding the key again: `waiting` (attempts
   * 0) when another message of the key is unfinished, else left `dead` for the redrive to
   * make it the key's head. Returns the state it is left in. The caller holds the key's lock.
   */
  rejoinKey(x: Executor, eventId: string, now: number): Promise<'waiting' | 'dead'>;
  /**
   * dead → skipped for the named dead messages; returns the ids moved, sorted. Each
   * skipped message with a key releases its key's next message in the same transaction.
   */
  skip(x: Executor, ids: readonly string[], now: number): Promise<string[]>;
  /** The keys (of `queue` when given) whose head is dead, by key, at most `limit`, with the count behind each. */
  blockedKeys(x: Executor, limit: number, queue?: string): Promise<BlockedKeyRow[]>;
  /** How many keys (of `queue` when given) are blocked by a dead head. */
  countBlockedKeys(x: Executor, queue?: string): Promise<number>;
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
  snapshot(store: StatementRunner, now: number): Promise<SnapshotRow[]>;
  /**
   * {@link snapshot}'s rows for one queue, in one statement, counted from the queue's
   * messages (the maintained counters are the store's): its cost grows with the store.
   */
  queueSnapshot(x: Executor, now: number, queue: string): Promise<SnapshotRow[]>;
  /** Messages by queue and state, every message counted. */
  countsByQueue(x: Executor): Promise<{ queue: string; state: string; n: unknown }[]>;

  /**
  // The read-only views (queue/inspect, list, due; redrive's preview): one
  // statement each, run on `store.read`'s executor.

  /** The message `eventId` with its recorded outcome, or undefined. */
  readMessage(x: Executor, eventId: string): Promise<MessageRow | undefined>;
  /** The dead messages not pruned (of `queue` when given), by event id: all of them or the first `limit`. */
  listDead(x: Executor, limit?: number, queue?: string): Promise<MessageRow[]>;
  /** How many messages {@link listDead} returns without a limit. */
  countDead(x: Executor, queue?: string): Promise<number>;
  /** One keyset page of the messages `page.filter` takes, in `page.order`. */
  listPage(x: Executor, page: ListPage): Promise<MessageRow[]>;
  /** How many messages `filter` takes. */
  countMatching(x: Executor, filter: MessageFilter): Promise<number>;
  /**
   * The earliest `available_at` of a ready message and `lease_until` of a leased one,
   * and the statement's now (`now` bound: the host's clock or a model clock; on the
   * server's clock the server's), the clock those times are on.
   */
  nextDue(
    x: Executor,
    now: number,
  ): Promise<{ ready_at: unknown; lease_at: unknown; now: unknown }>;
  /** Ready messages still in backoff at `now` and leased ones, with their earliest times. */
  waiting(x: Executor, now: number): Promise<WaitingRow>;
  /** The named messages (any state), or every dead one (of a queue), by event id, for a redrive preview. */
  readForPreview(x: Executor, selection: DeadSelection): Promise<PreviewRow[]>;

  // The store's recorded id policy (`onceq_meta`).

  /**
   * The recorded policy text, undefined when none. Inside a write transaction on a
   * backend with row locks (PostgreSQL) it is read `FOR SHARE`: a concurrent policy
   * change waits for running enqueues, and later enqueues wait for it.
   */
  readIdPolicy(x: Executor): Promise<string | undefined>;
  /** {@link readIdPolicy} locked `FOR UPDATE` where rows lock: the start of a policy change. */
  lockIdPolicy(x: Executor): Promise<string | undefined>;
  /** Writes the policy text, creating the row if missing. */
  writeIdPolicy(x: Executor, value: string): Promise<void>;
  /** Whether the store holds any message at all. */
  hasMessages(x: Executor): Promise<boolean>;
  /**
   * The next page of stored event ids after `after` (`''` for the first), in id order;
   * a page shorter than `pageSize` is the last.
   */
  idPage(x: Executor, after: string): Promise<{ ids: string[]; pageSize: number }>;

  // Prune: a dry run's count, keyset pages of candidates, and the tombstones.

  /** Finished messages of `state` (of `queue` when given), not yet pruned, finished before `before`. */
  countPrunable(x: Executor, state: PrunableState, before: number, queue?: string): Promise<number>;
  /**
   * The next `limit` candidates after the cursor, in `messages_state` order (state,
   * available_at, event_id): a range scan from the cursor. The first cursor is `(-1, '')`.
   */
  prunePage(
    x: Executor,
    state: PrunableState,
    before: number,
    after: { availableAt: number; eventId: string },
    limit: number,
    /** Only candidates of this queue. */
    queue?: string,
  ): Promise<{ event_id: string; payload: string; available_at: number }[]>;
  /**
   * Turns `rows` into tombstones (payload gone, `pruned_at = now`, each its SHA-256),
   * repeating every condition of the page, so a message redriven since is skipped.
   * Returns the rows changed.
   */
  pruneRows(
    x: Executor,
    state: PrunableState,
    rows: readonly { eventId: string; sha256: string }[],
    now: number,
    before: number,
  ): Promise<number>;

  // The dedup window: forgetting tombstones (`prune`'s `forgetOlderThanSeconds`).

  /**
   * The next `limit` tombstones of `state` finished before `before` that may be
   * forgotten (no delivery of theirs still waiting), after the cursor, in
   * `messages_state` order. The first cursor is `(-1, '')`.
   */
  forgetPage(
    x: Executor,
    state: PrunableState,
    before: number,
    after: { availableAt: number; eventId: string },
    limit: number,
  ): Promise<{ event_id: string; available_at: number }[]>;
  /**
   * Deletes those of `ids` still forgettable (every condition of the page checked again
   * in the caller's write transaction) with their delivery attempts, deliveries, effect
   * and completion. Returns how many messages it deleted.
   */
  forgetRows(
    x: Executor,
    state: PrunableState,
    ids: readonly string[],
    before: number,
  ): Promise<number>;
  /** How far the store has forgotten (Unix seconds; 0 = never). */
  readForgottenBefore(x: Executor): Promise<number>;
  /** Moves the recorded horizon to `before` unless it is already later. */
  recordForgottenBefore(x: Executor, before: number): Promise<void>;

  // The maintained counters (`onceq_counts`, migration 0004) and the doctor's data checks.

  /** Every counted or present key, with the counter's and the rows' figures, one statement. */
  compareCounters(x: Executor): Promise<CounterRow[]>;
  /** Replaces every counter with a real count, in the caller's write transaction. */
  recount(x: Executor): Promise<void>;
  /** Messages stored, those that keep their payload and its bytes, as counted (migration 0017). */
  storageCounts(x: Executor): Promise<StorageCounts>;
  /** How many rows break the invariant `check`, and the first `limit` of their ids. */
  violations(
    x: Executor,
    check: InvariantCheck,
    limit: number,
  ): Promise<{ n: number; ids: string[] }>;
  /** Leases that ran out before `cutoff`: how many, and the oldest `lease_until`. */
  expiredLeases(x: Executor, cutoff: number): Promise<{ n: number; oldest: number }>;
  /** The names of the applied migrations, in order. */
  appliedMigrations(x: Executor): Promise<string[]>;

  /**
   * The backend's own consistency checks, run right after the schema checks (SQLite:
   * `integrity_check` and `foreign_key_check`; none on PostgreSQL, whose storage checks
   * itself).
   */
  readonly storageProbes: readonly DoctorProbe[];
  /** Checks run last, of the planner's view of the data (PostgreSQL: statistics). */
  readonly plannerProbes: readonly DoctorProbe[];
  /** A server's connections against its limit, for the doctor; absent without one (SQLite). */
  readonly readConnections?: (x: Executor) => Promise<ConnectionCount>;
  /**
   * The live schema and the one the migrations build, read in the caller's write
   * transaction `x` (SQLite: an in-memory database; PostgreSQL: a scratch schema created
   * and dropped inside `x`).
   */
  schemas(x: Executor): Promise<[live: SchemaMap, reference: SchemaMap]>;
  /**
   * Keeps writers out until `x` commits, so a recount and its replacement see the same
   * rows (PostgreSQL: `LOCK TABLE … IN SHARE MODE`; SQLite: nothing, `BEGIN IMMEDIATE`
   * already holds the one write lock).
   */
  lockForRecount(x: Executor): Promise<void>;
  /**
   * Gives freed pages back to the file system (SQLite `VACUUM`, outside any
   * transaction) and says so; where the backend does that itself (PostgreSQL's
   * autovacuum) it does nothing and returns false.
   */
  vacuum(x: Executor): Promise<boolean>;
  /**
   * Gives up to `maxPages` free pages back to the file system in the caller's write
   * transaction, without rewriting the file (SQLite `PRAGMA incremental_vacuum` on a
   * store created with `auto_vacuum = INCREMENTAL`); returns how many. 0 where there is
   * nothing to do (an older SQLite store, PostgreSQL: autovacuum's job).
   */
  releaseFreePages(x: Executor, maxPages: number): Promise<number>;
  /**
   * The bytes the store occupies: SQLite the database's pages, free ones included, as the
   * connection sees them (the `-wal` file is transient: a checkpoint folds it in, so it
   * is not counted); PostgreSQL every onceq table of the schema with its indexes and
   * TOAST (`pg_total_relation_size`).
   */
  storageBytes(x: Executor): Promise<number>;
  /**
   * Writes a consistent copy of the store to `file`, which does not exist yet (SQLite
   * `VACUUM INTO`, one read snapshot). Only where {@link Capabilities.backup} says so.
   */
  copyTo(x: Executor, file: string): Promise<void>;
}

/** Facts of a backend, as plain data: callers read these, never the backend's kind. */
export interface Capabilities {
  /**
   * Claim locks the picked rows with `FOR UPDATE SKIP LOCKED` (PostgreSQL: concurrent
   * claimers skip each other's rows). When false the backend serializes writers
   * instead (SQLite: `BEGIN IMMEDIATE` takes the one write lock before the first read).
   */
  readonly skipLocked: boolean;
  /** Largest number of bound parameters one statement may carry. */
  readonly maxParameters: number;
  /**
   * `backup` can copy the store to a file ({@link Driver.copyTo}); where not,
   * the backend's own tools do (PostgreSQL: `pg_dump`).
   */
  readonly backup: boolean;
  /**
   * Every lease, availability, backoff and fence time is read in the statement itself,
   * from the server's clock (PostgreSQL: workers on many hosts whose clocks disagree).
   * When false the bound `now`, the host's clock, is the time (SQLite: one host).
   */
  readonly serverClock: boolean;
}
