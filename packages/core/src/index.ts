/**
 * `@onceq/core`: a local queue that turns a stream of events into effects exactly once,
 * on a SQLite file or PostgreSQL. This root entry is what an application calls: open a
 * store, enqueue, process (the `Worker`, or `claim` → `apply` / `fail` by hand),
 * inspect and redrive, the handler contract and the errors. What not everyone needs has
 * a subpath: `@onceq/core/postgres` (the PostgreSQL driver's helpers),
 * `@onceq/core/metrics` (Prometheus, needs `prom-client`), `@onceq/core/testing`
 * (crash points and stores at an old schema version, for tests only).
 *
 * Importing any entry runs nothing: no environment is read and no connection is made
 * until you call a function.
 *
 * @module
 */

export type {
  /** Options of {@link openStore}: clock, protocol knobs, PostgreSQL schema, id policy. */
  OpenStoreOptions,
  /** An open store (SQLite file or PostgreSQL database); close it with `store.close()`. */
  Store,
} from './driver/backend.ts';
export type {
  /**
   * Your open transaction on the store's own database (a Kysely transaction, or the
   * driver's), for `enqueue(store, events, { transaction })`: the events exist iff it commits.
   */
  CallerTransaction,
} from './driver/caller-transaction.ts';
export {
  /**
   * The batch as a whole was refused, nothing of it written (invalid line, conflict);
   * `issues` names each line. Exit code 3 in the CLI.
   */
  BatchRejectedError,
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
  /** Thrown by a handler: the message is retried with backoff (1 s, 2 s), dead after 3 attempts. */
  TemporaryFailure,
} from './errors.ts';
export type {
  /**
   * A completion's `{ write(tx), summary? }`: your own rows, written in the ACK's
   * transaction; they commit if and only if the ACK commits.
   */
  Completion,
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
} from './handler/contract.ts';
export type {
  /** One event as an object, `{ eventId, payload }`: what `enqueue` takes besides JSONL bytes. */
  EventInput,
} from './input/events.ts';
export {
  /** A float lexeme of the payload (`100.0`, `1e2`), kept apart from integers; `.toString()` as written. */
  JsonFloat,
  /** A payload: a JSON object as onceq's strict parser read it (integers, bigints, {@link JsonFloat}). */
  type JsonObject,
} from './input/json-value.ts';
export {
  /**
   * Opens a store and applies pending migrations: PostgreSQL for a `postgres://` URL
   * (needs the package `pg`), else a SQLite file at the path (created if missing).
   */
  openStore,
} from './open.ts';
export {
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
  /** Extends a live lease (a heartbeat), fenced on its generation. */
  extend,
} from './queue/extend.ts';
export {
  /** Reports a failure for a claimed message: temporary (retry with backoff) or permanent (dead). */
  fail,
} from './queue/fail.ts';
export {
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
  /**
   * Returns dead messages to ready for a new cycle (attempts reset, generation kept);
   * anything not dead refuses the whole call.
   */
  redrive,
} from './queue/redrive.ts';
export { skip } from './queue/skip.ts';
export type {
  /** The right to process one message, `(eventId, generation)`, valid while `now < leaseUntil`. */
  Lease,
} from './types.ts';
export {
  /** Options of {@link work}: batch, max, lease. */
  type WorkOptions,
  /**
   * Processes messages until nothing is claimable now (or `max`): the worker loop in
   * drain mode, for scripts and tests.
   */
  work,
} from './worker/work.ts';
export {
  /**
   * The long-running worker: batches, concurrency, heartbeats, wake-ups on new work,
   * graceful stop. `new Worker(store, handler, options)`, then `start()` and `stop()`.
   */
  Worker,
  /** Options of {@link Worker}: concurrency, batch, lease, log, metrics, pruning. */
  type WorkerOptions,
} from './worker/worker.ts';
