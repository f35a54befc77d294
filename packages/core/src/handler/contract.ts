/**
 * The handler contract: what a handler is given, what it may return, and the transaction
 * a completion's `write` runs in. docs/handlers.md says the same for users.
 */
import type { Kysely } from 'kysely';
import type { Delivery } from '../delivery/declare.ts';
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
 * One column's value in a row of {@link CompletionRows}: bound as it is (a `boolean` is
 * `1`/`0` on SQLite), `null` for SQL NULL. A plain array or object (strings, finite
 * numbers, booleans, null, nested) is stored as its JSON text, for a JSON or text column.
 * Anything else (`undefined`, a `Date`, a class instance, a `JsonFloat`, `NaN`) is refused.
 */
export type ColumnValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | readonly PlainJson[]
  | { readonly [key: string]: PlainJson };

/** What a {@link ColumnValue} array or object may hold: stored as JSON text. */
export type PlainJson =
  | string
  | number
  | boolean
  | null
  | readonly PlainJson[]
  | { readonly [key: string]: PlainJson };

/** One row of a table of the user's own: column name → value. */
export type CompletionRow = { readonly [column: string]: ColumnValue };

/**
 * Rows onceq inserts into tables of the user's own, in the ACK's transaction: a table name
 * (letters, digits and `_`, not starting with a digit; on PostgreSQL optionally one
 * schema, `"shop.ledger_entries"`) → one row or an array of rows. Names are quoted as
 * written (`"ledger_entries"`), so they are case-sensitive.
 */
export type CompletionRows = { readonly [table: string]: CompletionRow | readonly CompletionRow[] };

export interface CompletionParts {
  /**
   * Rows onceq inserts itself, after the fenced ACK: the rows of every message of a batch
   * go in with one multi-row INSERT per table and column list, so a batch of 100 costs one
   * statement per table, not 100 round trips. Tables are written in the order they first
   * appear. Use it for plain rows; use {@link write} for anything else.
   */
  readonly insert?: CompletionRows;
  /**
   * Statements of the user's own (updates, reads, conditional logic), run after the ACK
   * and after {@link insert}'s rows, one round trip per statement.
   */
  write?(tx: CompletionTx): unknown;
  /**
   * Webhooks to send once the message is done: each becomes a row of onceq's
   * `deliveries` table, written with the ACK like {@link insert}'s rows (it exists if and
   * only if the message is done), then sent by `onceq deliver` to the endpoint it names,
   * at least once under a `webhook-id` that is the same on every attempt
   * (docs/webhooks.md).
   */
  readonly deliver?: readonly Delivery[];
  /** What onceq records for the done message (`show`, console); at most 200 characters. */
  readonly summary?: string;
}

/**
 * A handler's own rows, written in the ACK's transaction after the fence check: what
 * `insert` names and what `write(tx)` writes commit if and only if the ACK commits (a
 * stale lease writes none of them). A row the database refuses fails its message alone
 * (temporary `write_failed`, the database's reason; permanent when it names a missing
 * table or column); a `write` that throws rolls back everything of its message and
 * fails it (a branded failure keeps its kind and code; a missing table or column is a
 * permanent `write_failed`; anything else is a temporary `handler_error`). At least one
 * of `insert`, `write` and `deliver`.
 */
export type Completion = CompletionParts &
  (
    | { write(tx: CompletionTx): unknown }
    | { readonly insert: CompletionRows }
    | { readonly deliver: readonly Delivery[] }
  );

/** What a handler returns: the lesson's money effect, or a completion of its own. */
export type HandlerReturn = Effect | Completion;

/**
 * The store a handler runs against, so one module can serve both backends (placeholders
 * `?` or `$1`, which schema holds onceq's own tables).
 */
export interface HandlerStore {
  /** `sqlite` or `postgres`: also which placeholders `tx.query` takes. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * The schema holding onceq's tables: `main` on SQLite, the store's schema on PostgreSQL
   * (default `onceq`). Your own tables are named as any statement on the connection names
   * them (SQLite: the store's file; PostgreSQL: the connection's `search_path`, by default
   * `public`); onceq never puts its schema on that path.
   */
  readonly schema: string;
}

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
  /** The store the message is in: its backend and the schema of onceq's tables. */
  readonly store: HandlerStore;
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
