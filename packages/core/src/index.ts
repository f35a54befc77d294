/**
 * `@onceq/core`: a local queue that turns a stream of events into effects exactly once,
 * on a SQLite file or PostgreSQL. This root entry is what an application calls: open a
 * store, enqueue, process (the `Worker`, or `claim` → `apply` / `fail` by hand),
 * inspect and redrive, the handler contract and the errors. What not everyone needs has
 * a subpath: `@onceq/core/postgres` (the PostgreSQL driver's helpers),
 * `@onceq/core/metrics` (Prometheus, needs `prom-client`), `@onceq/core/service` (the
 * worker's log and two-stage shutdown on signals, what `onceq worker` uses),
 * `@onceq/core/testing` (crash points and stores at an old schema version, for tests
 * only). Every type a signature here names is exported here too.
 *
 * Importing any entry runs nothing: no environment is read and no connection is made
 * until you call a function.
 *
 * @module
 */

export type {
  /** The clock a store reads: milliseconds since the epoch (tests pass a model clock). */
  Clock,
} from './clock.ts';
/** One delivery a completion declares (`deliver`); the sender is `@onceq/core/webhooks`. */
export type { Delivery } from './delivery/declare.ts';
export type {
  /** `'sqlite' | 'postgres'`: `store.kind`. */
  BackendKind,
  /** A PostgreSQL store's connections: open, the most it may open, refused, short. */
  ConnectionUse,
  /** Options of {@link openStore}: clock, protocol knobs, PostgreSQL schema, id policy. */
  OpenStoreOptions,
  /** An open store (SQLite file or PostgreSQL database); close it with `store.close()`. */
  Store,
} from './driver/backend.ts';
export type {
  /**
   * Your open transaction on the store's database, for `enqueue(store, events, {
   * transaction })` (the events exist iff it commits): `transaction(store, fn)`'s `tx`;
   * on PostgreSQL also a Kysely transaction or a `pg` client after `BEGIN`.
   */
  CallerTransaction,
  /** A `pg` client inside your `BEGIN … COMMIT`: one kind of {@link CallerTransaction}. */
  PgClientLike,
} from './driver/caller-transaction.ts';
export type {
  /** Dead messages by their event ids, `'all'`, or `{ queue }`: every dead message of one queue. */
  DeadSelection,
} from './driver/sql/dead-selection.ts';
export {
  /** `transaction(store, fn)`'s `tx`: `kind`, `query(sql, params)`, `db`. */
  type StoreTransaction,
  /** Runs `fn(tx)` in one transaction on the store's own connection; concurrent callers take turns. */
  transaction,
} from './driver/store-transaction.ts';
export {
  /** One refused line of a batch: its line number, event id if read, and the reason. */
  type BatchIssue,
  /**
   * The batch as a whole was refused, nothing of it written (invalid line, conflict);
   * `issues` names each line. Exit code 3 in the CLI.
   */
  BatchRejectedError,
  /** What {@link isHandlerFailure} recognises: the failure brand and a string `code`. */
  type FailureShape,
  /**
   * True when a thrown value is a handler failure: it carries the brand
   * `Symbol.for('onceq.failure')` (`'temporary'` or `'permanent'`) and a string `code`.
   * Recognised by the brand, never by class, so a module with its own copy of this
   * package (or none) is read the same.
   */
  isHandlerFailure,
  /** The caller no longer holds the lease it names (wrong state, older generation, expired). */
  LeaseLostError,
  /** Redrive was asked for a message that is not dead; nothing changed. */
  NotDeadError,
  /** No message has this event id. */
  NotFoundError,
  /** Base class of every error onceq throws on purpose: a stable `code` and an `exitCode`. */
  OnceqError,
  /** Thrown by a handler: the message goes straight to the DLQ with this code and detail. */
  PermanentFailure,
  /** What a rejection's numbers count: JSONL lines, or the positions of event objects. */
  type RejectionUnit,
  /** Another process held the SQLite write lock longer than the busy timeout. Exit code 1. */
  StoreBusyError,
  /** The store could not be opened or reached (bad path, server down). Exit code 1. */
  StoreUnavailableError,
  /** Thrown by a handler: the message is retried with backoff (1 s, 2 s), dead after 3 attempts. */
  TemporaryFailure,
} from './errors.ts';
export type {
  /** One column's value in a completion row: string, number, bigint, boolean, null, bytes or JSON. */
  ColumnValue,
  /**
   * A completion's `{ write(tx), summary? }`: your own rows, written in the ACK's
   * transaction; they commit if and only if the ACK commits.
   */
  Completion,
  /** The fields every {@link Completion} may carry: `insert`, `write`, `summary`. */
  CompletionParts,
  /** One row of a completion's `insert`: column → value. */
  CompletionRow,
  /** A completion's `insert`: table → one row or an array of rows. */
  CompletionRows,
  /** The ACK's open transaction as `write(tx)` gets it: `kind`, `query(sql, params)`, `db`. */
  CompletionTx,
  /** The business result of one message: `{ category, amountCents }`. */
  Effect,
  /**
   * A handler, sync or async: runs outside any transaction on the payload its claim read;
   * returns an effect or a completion, or throws a failure.
   */
  Handler,
  /** What a handler knows besides the payload: `eventId`, `attempt`, `generation`, and a `signal`. */
  HandlerContext,
  /** What a handler returns: an {@link Effect} or a {@link Completion}. */
  HandlerReturn,
  /** `context.store`: the backend (`kind`) and the schema of onceq's tables (`schema`). */
  HandlerStore,
  /** JSON as a completion column may hold it: plain objects, arrays, strings, numbers, booleans, null. */
  PlainJson,
} from './handler/contract.ts';
export type {
  /** One accepted line of a parsed batch: event id, canonical payload and its bytes. */
  BatchEntry,
  /** A batch already parsed and validated: its entries, in order. */
  ParsedBatch,
} from './input/batch.ts';
export type {
  /** One event as an object, `{ eventId, payload }`: what `enqueue` takes besides JSONL bytes. */
  EventInput,
} from './input/events.ts';
export type {
  /** An event id policy: `{ kind: 'lesson' }`, `{ kind: 'general' }` or `{ kind: 'pattern', source }`. */
  IdPolicy,
} from './input/id-policy.ts';
export {
  /** A float lexeme of the payload (`100.0`, `1e2`), kept apart from integers; `.toString()` as written. */
  JsonFloat,
  /** A payload: a JSON object as onceq's strict parser read it (integers, bigints, {@link JsonFloat}). */
  type JsonObject,
} from './input/json-value.ts';
/** A listener (console, metrics) was refused its port: another process holds it. Exit code 2. */
export { ListenRefusedError } from './listen.ts';
export {
  /** The store's event id policy (`lesson` when none is recorded). */
  getIdPolicy,
  /** `openStore`'s `idPolicy` differs from the store's and the store already holds messages. */
  IdPolicyRefusedError,
  /**
   * Changes the store's event id policy, explicitly; refused (`IdPolicyRefusedError`, nothing
   * changed) when a stored event id does not fit the new one.
   */
  setIdPolicy,
} from './maintenance/meta.ts';
export {
  /**
   * Opens a store and applies pending migrations: PostgreSQL for a `postgres://` URL
   * (needs the package `pg`), else a SQLite file at the path (created if missing).
   */
  openStore,
} from './open.ts';
export type {
  /** A delay before a retry, in seconds, after `attempt` claims. */
  BackoffSchedule,
  /** `'block' | 'skip'`: what a dead message does to its ordering key. */
  OnDead,
  /** A worker's policy: attempts, backoff, lease, on dead (`WorkerOptions` extends it). */
  PolicyOptions,
} from './policy.ts';
export {
  /** Options of {@link claim}: the lease length. */
  type ClaimOptions,
  /** Claims the next claimable message (recovering expired leases first), or null. */
  claim,
} from './queue/claim.ts';
export {
  /**
   * Records a handler's result for a claimed message: the effect and the ACK in one
   * transaction, fenced on the lease (a lost lease writes nothing and throws
   * {@link LeaseLostError}); a failure is recorded as `fail` would.
   */
  apply,
} from './queue/complete.ts';
export {
  /** What {@link enqueue} takes: JSONL bytes or text, event objects, or a parsed batch. */
  type EnqueueInput,
  /** Options of {@link enqueue}: `transaction`, your open transaction on the same database. */
  type EnqueueOptions,
  /**
   * Validates a batch (JSONL bytes or event objects) and stores it all or nothing:
   * duplicates are counted, a conflicting payload rejects the whole batch. With
   * `{ transaction }` it writes inside your open transaction.
   */
  enqueue,
} from './queue/enqueue.ts';
export {
  /** The lease {@link extend} renewed: its event id, generation and new `leaseUntil`. */
  type ExtendedLease,
  /** Extends a live lease (a heartbeat), fenced on its generation. */
  extend,
} from './queue/extend.ts';
export {
  /** What {@link fail} recorded: the message's new state and when it is next due. */
  type FailResult,
  /** Reports a failure for a claimed message: temporary (retry with backoff) or permanent (dead). */
  fail,
} from './queue/fail.ts';
export {
  /** Options of {@link dlq}: one queue's dead messages. */
  type DlqOptions,
  /** The dead messages (the DLQ), each with its last error and its original payload. */
  dlq,
  /** One message in full, with its effect if any; throws {@link NotFoundError}. */
  show,
  /** Counts by state, effects, totals by category. */
  status,
} from './queue/inspect.ts';
export {
  /** Which of the selected dead messages `handler` would now accept; changes nothing. */
  previewRedrive,
  /** What {@link previewRedrive} found: which dead messages the handler would now accept. */
  type RedrivePreview,
  /** Which dead messages to redrive: their event ids, `'all'`, or `{ queue }`. */
  type RedriveSelection,
  /**
   * Returns dead messages to ready for a new cycle (attempts reset, generation kept);
   * anything not dead refuses the whole call.
   */
  redrive,
} from './queue/redrive.ts';
export { skip } from './queue/skip.ts';
export type {
  /** How a failure counts: `temporary` (retried) or `permanent` (dead at once). */
  FailureKind,
  /** A message's state: `ready`, `leased`, `done` or `dead`. */
  MessageState,
} from './states.ts';
export type {
  /** How {@link apply} recorded one result: `done`, `retry` or `dead`. */
  ApplyOutcome,
  /** What {@link enqueue} stored: `accepted` and `duplicates`. */
  EnqueueResult,
  /** A failure as {@link fail} takes it: kind, code and detail. */
  FailInput,
  /** The right to process one message, `(eventId, generation)`, valid while `now < leaseUntil`. */
  Lease,
  /** A lease named by `(eventId, generation)` alone, as {@link fail} and {@link extend} take it. */
  LeaseRef,
  /** One message as {@link show} and {@link dlq} return it. */
  MessageView,
  /** A store's protocol knobs: lease length, attempts, backoff (`store.protocol`). */
  ProtocolOptions,
  /** Messages by state: the four of the lesson always, `waiting` and `skipped` when any. */
  StateCounts,
  /** What {@link status} returns: counts by state, effects, totals by category. */
  StatusReport,
} from './types.ts';
export type {
  /** The fields of one log line besides its event and message. */
  LogFields,
  /** The line-oriented log a {@link Worker} writes (`createLog` in `@onceq/core/service`). */
  WorkerLog,
} from './worker/log.ts';
export type {
  /** What a {@link Worker} reports as it runs; `WorkerMetrics` in `@onceq/core/metrics` is one. */
  MetricsRecorder,
  /** The `outcome` label of a processed message: `done`, `retry`, `dead` or `lost`. */
  Outcome,
  /** The `reason` label of messages given back: `stop` or `store_unreachable`. */
  ReleaseReason,
} from './worker/metrics-recorder.ts';
export type {
  /** `WorkerOptions.prune`: how often, and what, a worker prunes as it runs. */
  PruneSchedule,
} from './worker/prune-schedule.ts';
export {
  /** Options of {@link work}: batch, max, lease. */
  type WorkOptions,
  /** What {@link work} did: counts by outcome. */
  type WorkSummary,
  /**
   * Processes messages until nothing is claimable now (or `max`): the worker loop in
   * drain mode, for scripts and tests.
   */
  work,
} from './worker/work.ts';
export {
  /** Options of `worker.stop()`: how long running handlers may finish. */
  type StopOptions,
  /** How a worker stopped: graceful or forced, and what it had done. */
  type StopResult,
  /**
   * The long-running worker: batches, concurrency, heartbeats, wake-ups on new work,
   * graceful stop. `new Worker(store, handler, options)`, then `start()` and `stop()`.
   */
  Worker,
  /** Options of {@link Worker}: queues, concurrency, batch, policy, log, metrics, pruning. */
  type WorkerOptions,
  /** One queue of `WorkerOptions.queues` given as a record: its own handler and policy. */
  type WorkerQueueOptions,
  /** What a worker has done so far: counts by outcome. */
  type WorkerSummary,
} from './worker/worker.ts';
