import type { Clock } from '../clock.ts';
import type { IdPolicy } from '../input/id-policy.ts';
import type { ProtocolOptions } from '../types.ts';
import type { CallerTransaction } from './caller-transaction.ts';
import type { Driver } from './driver.ts';
import type { Executor } from './executor.ts';

export const BACKEND_KINDS = ['sqlite', 'postgres'] as const;
export type BackendKind = (typeof BACKEND_KINDS)[number];

/** An open onceq store: the database, its clock and protocol settings. */
export interface Store {
  readonly kind: BackendKind;
  /**
   * Every statement onceq runs, as this backend writes it, and the backend's facts as
   * plain data (the one seam between onceq and the SQL; see driver/driver.ts).
   *
   * @internal
   */
  readonly driver: Driver;
  readonly clock: Clock;
  readonly protocol: ProtocolOptions;
  /** Where the store lives, safe to print: a file path, or a URL without its password. */
  readonly location: string;
  /**
   * The schema that holds onceq's tables: `main` on SQLite (the store's file), the store's
   * schema on PostgreSQL (`options.schema`, default `onceq`). onceq names its own tables
   * with it; yours resolve by your connection's rules (docs/handlers.md).
   */
  readonly schema: string;
  /**
   * Runs `fn` in one write transaction (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: `BEGIN`,
   * re-run after a deadlock, serialization failure or unique-key race) with an
   * {@link Executor}: every write onceq makes. Commits when `fn` resolves, rolls back
   * when it throws; the error is rethrown.
   *
   * With `within`, `fn` runs inside that transaction of the caller's instead, on the
   * caller's connection and in a savepoint of it: nothing commits until the caller
   * commits, a throw rolls back the savepoint (never the caller's own writes) and is
   * rethrown, and nothing is retried (driver/caller-transaction.ts).
   *
   * @internal
   */
  transact<T>(
    fn: (x: Executor) => Promise<T>,
    within?: CallerTransaction,
    options?: TransactOptions,
  ): Promise<T>;
  /**
   * Runs `fn` with an {@link Executor} whose statements each commit by themselves: no
   * write transaction, no write lock held between them (SQLite: no `BEGIN`; PostgreSQL:
   * one pooled connection, autocommit). For reads, for what must run outside a
   * transaction (`VACUUM`), and for a write that is one statement (PostgreSQL's claim
   * and money ACK: no BEGIN/COMMIT round trips). Same retry rules as {@link transact}.
   *
   * @internal
   */
  read<T>(fn: (x: Executor) => Promise<T>): Promise<T>;
  /**
   * Number of times a busy database was retried (SQLite contention); 0 where not tracked.
   *
   * @internal
   */
  busyRetries(): number;
  /**
   * Backends with notifications (PostgreSQL): LISTENs for enqueue and redrive commits in
   * this store (on one of the store's pooled connections, or on `?listen_url=`) and
   * calls `onWake` for each; `onError` gets a lost connection (the caller polls
   * meanwhile; the listener re-establishes it). Rejects when notifications cannot be
   * heard at all. Absent where the backend has none (SQLite polls).
   *
   * @internal
   */
  listen?(onWake: () => void, onError: (error: Error) => void): Promise<WakeListener>;
  /**
   * PostgreSQL: lets the pool hold up to `connections` (a worker asks for one per
   * handler it runs at once), unless the URL's `?pool_max=` fixed it. Absent where there
   * is no pool.
   *
   * @internal
   */
  sizePool?(connections: number): void;
  /**
   * PostgreSQL: the store's connections to the server. Absent where there is no pool.
   *
   * @internal
   */
  readonly connections?: StoreConnections;
  close(): Promise<void>;
}

export interface TransactOptions {
  /**
   * Served before every other caller waiting for a connection (lease extensions: a held
   * lease kept alive beats new work). Default false.
   */
  urgent?: boolean;
}

/** What a store's pool holds, for the worker's log, metrics and claim decisions. */
export interface ConnectionUse {
  /** Connections open now. */
  readonly held: number;
  /** Most connections the pool may open. */
  readonly max: number;
  /** Connections the server refused (or could not open) since the store was opened. */
  readonly refused: number;
  /** True while the pool works with what it holds after a refusal (growth paused). */
  readonly short: boolean;
}

export interface StoreConnections {
  use(): ConnectionUse;
  /** True when a statement would get a connection now without waiting for one. */
  spare(): boolean;
  /** Calls `fn` each time a refused connection leaves the pool short. */
  onShort(fn: (use: ConnectionUse) => void): void;
}

/** An open LISTEN connection (see {@link Store.listen}). */
export interface WakeListener {
  /** True while notifications arrive (false while a lost connection is re-established). */
  live(): boolean;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  clock?: Clock;
  protocol?: Partial<ProtocolOptions>;
  /** SQLite only: `FULL` (default, every commit durable) or `NORMAL`. */
  synchronous?: 'FULL' | 'NORMAL';
  /** SQLite only: how long a busy database is retried, in ms. Default 10000. */
  busyTimeoutMs?: number;
  /** Called with every SQL statement the store runs (for query-plan tests and debugging). */
  onQuery?: (sql: string, parameters: readonly unknown[]) => void;
  /** PostgreSQL only: the schema the tables live in. Default `onceq`. */
  schema?: string;
  /**
   * The event id policy the store must have (`openStore` only). Default: none, the store
   * keeps its recorded policy (`lesson` for a new store). Given:
   * - a store already recorded with this policy: nothing changes;
   * - a new store, or an existing store that holds no message at all: the store's
   *   recorded policy is switched to this one, durably (every later open and every
   *   `onceq` command sees it);
   * - an existing store holding messages under another policy: `openStore` rejects with
   *   `IdPolicyRefusedError` and nothing changes (switching then is `onceq id-policy set`,
   *   which checks every stored id first).
   */
  idPolicy?: IdPolicy;
  /**
   * SQLite only: open an existing file read-only (no file is created, no pragma is
   * written), so reads work on read-only media and full disks. When the file's schema is
   * behind this build, the store is opened read-write once to migrate it. Default false.
   */
  readOnly?: boolean;
  /**
   * PostgreSQL: refuse a schema that holds no onceq store instead of creating it (for
   * writes that only make sense on an existing store: redrive, fail). An older store is
   * still migrated. SQLite callers check the file themselves. Default false.
   */
  mustExist?: boolean;
  /**
   * PostgreSQL: when the server has no connection to give at open (`max_connections`
   * reached, starting up, or too busy to answer in time), wait and try again (1 s, then
   * longer, up to 30 s between tries) instead of failing; `onWait` hears the first such
   * refusal, once, in one sentence. For long-running workers: one more worker never fails
   * because the others hold every slot. Default: fail at once.
   */
  waitForConnection?: { onWait(message: string): void };
}
