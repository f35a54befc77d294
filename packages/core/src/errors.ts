/**
 * Every error onceq throws on purpose is an {@link OnceqError} with a stable `code`
 * and the process exit code the CLI maps it to (docs/protocol.md §7):
 * 1 internal · 2 usage · 3 input rejected · 4 protocol refusal.
 */
export class OnceqError extends Error {
  readonly code: string;
  readonly exitCode: number;
  constructor(code: string, exitCode: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.exitCode = exitCode;
  }
}

/** One reason a batch was refused, with the 1-based line it belongs to (0 = the whole file). */
export interface BatchIssue {
  line: number;
  reason: string;
}

/** What a rejection's issue numbers count, and how many events the batch held. */
export interface RejectionUnit {
  /** JSONL lines (default), or event objects' 1-based positions. */
  unit?: 'line' | 'event';
  /** How many event objects were given: a rejection of one is said of the event. */
  events?: number;
}

/** The batch as a whole was refused: nothing of it was written. Exit code 3. */
export class BatchRejectedError extends OnceqError {
  readonly issues: readonly BatchIssue[];
  /**
   * How many problems were found: more than `issues.length` when the list was capped
   * (its last issue then says `… and N more`). Default: every issue is a problem.
   */
  readonly problems: number;
  /**
   * What an issue's `line` counts: a JSONL line (default), or an event object's 1-based
   * position in the array given to `enqueue`.
   */
  readonly unit: 'line' | 'event';
  constructor(
    issues: readonly BatchIssue[],
    options?: ErrorOptions & RejectionUnit & { problems?: number },
  ) {
    const unit = options?.unit ?? 'line';
    const message =
      unit === 'event' && options?.events === 1
        ? `event rejected, nothing was written: ${issues.map((i) => i.reason).join('; ')}`
        : describeIssues(issues, unit);
    super('batch_rejected', 3, message, options);
    this.issues = issues;
    this.problems = options?.problems ?? issues.length;
    this.unit = unit;
  }
}

function describeIssues(issues: readonly BatchIssue[], unit: 'line' | 'event'): string {
  const parts = issues.map((i) => (i.line > 0 ? `${unit} ${i.line}: ${i.reason}` : i.reason));
  return `batch rejected, nothing was written: ${parts.join('; ')}`;
}

/** The caller no longer holds the lease it names: wrong state, older generation, or expired. Exit code 4. */
export class LeaseLostError extends OnceqError {
  readonly eventId: string;
  readonly generation: number;
  constructor(eventId: string, generation: number, why: string) {
    super('lease_lost', 4, `lease lost for ${eventId} generation ${generation}: ${why}`);
    this.eventId = eventId;
    this.generation = generation;
  }
}

/** No message has this event id. Exit code 4. */
export class NotFoundError extends OnceqError {
  readonly eventId: string;
  constructor(eventId: string) {
    super('not_found', 4, `no message with event id ${eventId}`);
    this.eventId = eventId;
  }
}

/** Redrive was asked for messages that are not dead; nothing changed. Exit code 4. */
export class NotDeadError extends OnceqError {
  readonly eventIds: readonly string[];
  constructor(
    found: readonly { eventId: string; state: string }[],
    operation: 'redrive' | 'skip' = 'redrive',
  ) {
    const list = found.map((f) => `${f.eventId} is ${f.state}`).join(', ');
    const done = operation === 'redrive' ? 'redriven' : 'skipped';
    super(
      'not_dead',
      4,
      `${operation} refused, only dead messages can be ${done} (${list}); nothing changed`,
    );
    this.eventIds = found.map((f) => f.eventId);
  }
}

/**
 * The message's payload was removed by `onceq prune` (only a tombstone is left), so the
 * operation that needs it (redrive) is refused. Exit code 4.
 */
export class PrunedError extends OnceqError {
  readonly eventId: string;
  constructor(eventId: string, operation: string) {
    super(
      'pruned',
      4,
      `${operation} refused: ${eventId} was pruned (only its id, final state and payload hash are kept); nothing changed`,
    );
    this.eventId = eventId;
  }
}

/**
 * An optional peer dependency is not installed (`pg` for PostgreSQL, `prom-client` for
 * metrics): one sentence naming it and how to add it. Exit code 1.
 */
export class MissingPackageError extends OnceqError {
  readonly packageName: string;
  constructor(packageName: string, neededFor: string, cause?: unknown) {
    super(
      'missing_package',
      1,
      `${neededFor} needs the package ${packageName}, which is not installed; add it with: bun add ${packageName}`,
      { cause },
    );
    this.packageName = packageName;
  }
}

/** True when `error` says that the package `name` itself could not be found (not one of its files). */
export function isMissingPackage(error: unknown, name: string): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /Cannot (find|require) (package|module)/.test(message) && message.includes(name);
}

/** The store could not be opened or reached (bad path, server down). Exit code 1. */
export class StoreUnavailableError extends OnceqError {
  constructor(message: string, options?: ErrorOptions) {
    super('store_unavailable', 1, message, options);
  }
}

/** Another process held the SQLite write lock longer than the busy timeout. Exit code 1. */
export class StoreBusyError extends OnceqError {
  constructor(location: string, waitedMs: number, options?: ErrorOptions) {
    super(
      'store_busy',
      1,
      `the store ${location} stayed locked by another writer for ${Math.round(waitedMs / 1000)} s; try again`,
      options,
    );
  }
}

/**
 * The brand that marks a handler failure: `Symbol.for('onceq.failure')`, whose value is
 * the failure's kind. A failure is recognised by this brand, never by class identity, so
 * a handler module with its own copy of the SDK (or none: any thrown object carrying the
 * brand and a string `code`) is read the same by the CLI, the compiled binary and the
 * library.
 */
export const FAILURE_BRAND: unique symbol = Symbol.for('onceq.failure') as never;

/** What a thrown value must carry to count as a handler failure; see {@link FAILURE_BRAND}. */
export interface FailureShape {
  readonly [FAILURE_BRAND]: 'temporary' | 'permanent';
  readonly code: string;
  readonly message?: string;
}

/** True when `error` carries the failure brand with a known kind and a string `code`. */
export function isHandlerFailure(error: unknown): error is FailureShape {
  if (typeof error !== 'object' || error === null) return false;
  const kind = (error as Record<PropertyKey, unknown>)[FAILURE_BRAND];
  const { code } = error as { code?: unknown };
  return (kind === 'temporary' || kind === 'permanent') && typeof code === 'string';
}

/**
 * Thrown by a handler. `permanent` failures (code `invalid_payload` for a payload the
 * rules reject) go straight to `dead`; `temporary` ones are retried with backoff.
 * Recognised by its {@link FAILURE_BRAND}, not by `instanceof`.
 */
export class HandlerFailure extends Error {
  readonly kind: 'temporary' | 'permanent';
  readonly code: string;
  readonly [FAILURE_BRAND]: 'temporary' | 'permanent';
  constructor(kind: 'temporary' | 'permanent', code: string, message: string) {
    super(message);
    this.name = 'HandlerFailure';
    this.kind = kind;
    this.code = code;
    this[FAILURE_BRAND] = kind;
  }
}

export class PermanentFailure extends HandlerFailure {
  constructor(code: string, message: string) {
    super('permanent', code, message);
    this.name = 'PermanentFailure';
  }
}

export class TemporaryFailure extends HandlerFailure {
  constructor(code: string, message: string) {
    super('temporary', code, message);
    this.name = 'TemporaryFailure';
  }
}

/** What the storage under a store refused: the disk is full, it is read-only, or it failed. */
export const STORAGE_FAULTS = ['disk_full', 'read_only', 'io_error'] as const;
export type StorageFault = (typeof STORAGE_FAULTS)[number];

/**
 * The disk under the store refused a write (SQLite `SQLITE_FULL`, `SQLITE_READONLY…`,
 * `SQLITE_IOERR…`): one sentence naming the cause and the path, not an "internal error".
 * The transaction was rolled back, so nothing of the operation was written. Exit code 1.
 */
export class StorageError extends OnceqError {
  readonly fault: StorageFault;
  constructor(fault: StorageFault, location: string, options?: ErrorOptions) {
    const what =
      fault === 'disk_full'
        ? `the disk holding ${location} is full`
        : fault === 'read_only'
          ? `${location} is read-only (the file, its directory or its file system)`
          : `the disk holding ${location} failed to read or write (I/O error)`;
    super(fault, 1, `${what}; nothing was written`, options);
    this.fault = fault;
  }
}

/**
 * Gives each class its name as written in the source. A bundler may rename a class when
 * it splits chunks (`NotFoundError2` in the packed package), and {@link OnceqError}
 * reads its `name` from the class: without this an installed package's errors and stack
 * traces would carry the renamed one.
 */
export function keepClassNames(
  classes: Record<string, abstract new (...args: never[]) => unknown>,
): void {
  for (const [name, type] of Object.entries(classes)) {
    Object.defineProperty(type, 'name', { value: name, configurable: true });
  }
}

keepClassNames({
  OnceqError,
  BatchRejectedError,
  LeaseLostError,
  NotFoundError,
  NotDeadError,
  PrunedError,
  MissingPackageError,
  StoreUnavailableError,
  StoreBusyError,
  StorageError,
});

/** What `error` says, for a log line or a failure's detail: its message, or the value printed (never throws). */
export function errorText(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'a value that cannot be printed';
  }
}
