/**
 * The handler contract: what a handler is given, what it may return, and the transaction
 * a completion's `write` runs in. docs/handlers.md says the same for users.
 */
import type { Kysely } from 'kysely';
import type { JsonObject } from '../input/json-value.ts';

/** The lesson's money effect: one row of the `effects` table, recorded with the ACK. */
export interface Effect {
  category: string;
  amountCents: number;
}

/**
 * The ACK's open transaction, as a completion's {@link Completion.write} gets it: the same
 * connection onceq ACKs on (SQLite: the same file; PostgreSQL: the same database, any
 * schema), after the fence check, before COMMIT. Valid only while `write` runs.
 */
export interface CompletionTx {
  /** Which SQL dialect `query` speaks: placeholders `?` on SQLite, `$1…` on PostgreSQL. */
  readonly kind: 'sqlite' | 'postgres';
  /** Runs one statement in the ACK's transaction; `rowCount` is the rows it returned or changed. */
  query(
    sql: string,
    params?: readonly unknown[],
  ): Promise<{ rows: Record<string, unknown>[]; rowCount: number }>;
  /**
   * A Kysely bound to the ACK's transaction (typed by the caller). It cannot open or end
   * a transaction of its own: `db.transaction()` throws, since the ACK's COMMIT is the
   * only one.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the user's own tables, typed by the user.
  readonly db: Kysely<any>;
}

/**
 * A handler's own rows, written in the ACK's transaction: `write(tx)` runs after the fence
 * check, and what it writes commits if and only if the ACK commits. A `write` that throws
 * rolls back everything of its message and fails it (a branded failure keeps its kind and
 * code; anything else is a temporary `handler_error`).
 */
export interface Completion {
  write(tx: CompletionTx): unknown;
  /** What onceq records for the done message (`show`, console); at most 200 characters. */
  summary?: string;
}

/** What a handler returns: the lesson's money effect, or a completion of its own. */
export type HandlerReturn = Effect | Completion;

/** What a handler may know about the message besides its payload. */
export interface HandlerContext {
  readonly eventId: string;
  /** Which claim of the current cycle this is, 1-based. */
  readonly attempt: number;
  /** The fencing token of the lease the handler runs under. */
  readonly generation: number;
  /**
   * Fires when the worker lost the lease (a refused heartbeat) or is forced to stop, so a
   * slow handler can give up early: its result would be refused anyway.
   */
  readonly signal: AbortSignal;
}

/**
 * Business rules: turn a stored payload into an effect or a completion, sync or as a
 * Promise, or throw a failure (`PermanentFailure` for a payload it rejects,
 * `TemporaryFailure` when a dependency is down). Runs **outside** any transaction, on the
 * payload read under its lease's generation; its result is recorded by `complete`.
 */
export type Handler = (
  payload: JsonObject,
  context: HandlerContext,
) => HandlerReturn | Promise<HandlerReturn>;
