import type { Handler, HandlerContext, HandlerStore } from '../handler/contract.ts';
import { type HandlerResult, runHandler, withDeadline } from '../handler/run.ts';
import type { Lease } from '../types.ts';

/**
 * Where a claimed message is in the worker: `waiting` for a handler lane, `running`,
 * `finished` (its result is waiting to be recorded), `recording` (its result or its
 * release is being written), `returning` (its record could not reach the store: it is
 * kept alive until it is given back, attempt not spent), or `lost` (a heartbeat was
 * refused: its handler was told to stop, and its result, recorded anyway, is refused by
 * the fence).
 */
export type HeldState = 'waiting' | 'running' | 'finished' | 'recording' | 'returning' | 'lost';

/** One message the worker holds a lease on, from its claim until it is recorded or released. */
export class Held {
  readonly lease: Lease;
  /** The queue it was claimed from: its handler runs it, its policy records it. */
  readonly queue: string;
  /** When the lease runs out as far as this worker knows: the claim's, then each heartbeat's. */
  leaseUntil: number;
  state: HeldState = 'waiting';
  result: HandlerResult | undefined;
  /** performance.now() when the handler started; 0 before. */
  startedAt = 0;
  /** Its lost lease was counted and logged (once, whichever write found it). */
  lostCounted = false;
  #controller: AbortController | undefined;

  constructor(lease: Lease, queue: string) {
    this.lease = lease;
    this.queue = queue;
    this.leaseUntil = lease.leaseUntil;
  }

  /** The handler's signal, made on first use (a handler that never reads it costs nothing). */
  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  /** Tells the handler to stop (lost lease, deadline, forced stop). */
  abort(reason: Error): void {
    this.#controller ??= new AbortController();
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }
}

/** A held message's key: its event id and the generation it was claimed under. */
export function heldKey(lease: { eventId: string; generation: number }): string {
  return `${lease.eventId}/${lease.generation}`;
}

/**
 * The held messages of `held` by {@link heldKey}, made only when a heartbeat's or a
 * write's report names some of them (not one key per message claimed).
 */
export function byKey(held: ReadonlySet<Held>): Map<string, Held> {
  const keyed = new Map<string, Held>();
  for (const h of held) keyed.set(heldKey(h.lease), h);
  return keyed;
}

export interface HandlerRun {
  handler: Handler;
  /** What every handler's `context.store` says. */
  store: HandlerStore;
  /** Handlers running at once. */
  concurrency: number;
  /** A handler's deadline, ms; undefined: none. */
  timeoutMs: number | undefined;
  /** Whether a lane may start another handler (false once the worker is stopping). */
  mayStart(): boolean;
}

/**
 * Runs the handlers of `items` in claim order, up to `concurrency` at once, **outside**
 * any transaction, each on the payload its claim read under its generation. Returns when
 * every started handler has a result: `undefined` when all of them returned
 * synchronously (the lesson's handlers: no promise per message), else a promise. An item
 * a lane did not start (the worker began stopping) stays `waiting`, to be released.
 *
 * A handler past its deadline gets its signal aborted and a temporary
 * `handler_timeout` failure as its result at once ({@link withDeadline}).
 */
export function runHandlers(items: readonly Held[], run: HandlerRun): Promise<void> | undefined {
  let next = 0;
  // Synchronous results first, in claim order, until one handler returns a promise.
  while (next < items.length && run.mayStart()) {
    const item = items[next] as Held;
    if (item.state !== 'waiting') {
      next++;
      continue;
    }
    start(item);
    const result = runOne(item, run);
    if (result instanceof Promise) return lanes(items, next, result, run);
    finish(item, result);
    next++;
  }
  return undefined;
}

/**
 * The rest of {@link runHandlers} once item `first` returned `running`: up to
 * `concurrency` lanes, the first of them waiting on it.
 */
async function lanes(
  items: readonly Held[],
  first: number,
  running: Promise<HandlerResult>,
  run: HandlerRun,
): Promise<void> {
  let next = first + 1;
  const lane = async (own: Promise<HandlerResult> | null, item: Held | null) => {
    if (own !== null && item !== null) finish(item, await own);
    while (next < items.length && run.mayStart()) {
      const item = items[next++] as Held;
      if (item.state !== 'waiting') continue;
      start(item);
      finish(item, await runOne(item, run));
    }
  };
  const all = [lane(running, items[first] as Held)];
  for (let i = 1; i < Math.min(run.concurrency, items.length - first); i++) {
    all.push(lane(null, null));
  }
  await Promise.all(all);
}

function start(item: Held): void {
  item.state = 'running';
  item.startedAt = performance.now();
}

function finish(item: Held, result: HandlerResult): void {
  item.result = result;
  if (item.state === 'running') item.state = 'finished';
}

function runOne(item: Held, run: HandlerRun): HandlerResult | Promise<HandlerResult> {
  const result = runHandler(run.handler, item.lease.payload, new HeldContext(item, run.store));
  // A synchronous handler has returned already: no deadline to watch, no closure to make.
  if (run.timeoutMs === undefined || !(result instanceof Promise)) return result;
  return withDeadline(result, run.timeoutMs, (reason) => item.abort(reason));
}

/**
 * The context a held message's handler gets: its lease's numbers, and its signal, made
 * only when the handler reads it (a getter on the class, not one made per message).
 */
class HeldContext implements HandlerContext {
  readonly eventId: string;
  readonly attempt: number;
  readonly generation: number;
  readonly store: HandlerStore;
  readonly #held: Held;

  constructor(held: Held, store: HandlerStore) {
    const { lease } = held;
    this.eventId = lease.eventId;
    this.attempt = lease.attempt;
    this.generation = lease.generation;
    this.store = store;
    this.#held = held;
  }

  get signal(): AbortSignal {
    return this.#held.signal;
  }
}
