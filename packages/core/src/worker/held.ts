import type { Handler, HandlerContext } from '../handler/contract.ts';
import { type HandlerResult, runHandler, withDeadline } from '../handler/run.ts';
import type { Lease } from '../types.ts';

/**
 * Where a claimed message is in the worker: `waiting` for a handler lane, `running`,
 * `finished` (its result is waiting to be recorded), `recording` (its result or its
 * release is being written), or `lost` (a heartbeat was refused: its handler was told to
 * stop, and its result, recorded anyway, is refused by the fence).
 */
export type HeldState = 'waiting' | 'running' | 'finished' | 'recording' | 'lost';

/** One message the worker holds a lease on, from its claim until it is recorded or released. */
export class Held {
  readonly lease: Lease;
  /** When the lease runs out as far as this worker knows: the claim's, then each heartbeat's. */
  leaseUntil: number;
  state: HeldState = 'waiting';
  result: HandlerResult | undefined;
  /** performance.now() when the handler started; 0 before. */
  startedAt = 0;
  /** Its lost lease was counted and logged (once, whichever write found it). */
  lostCounted = false;
  #controller: AbortController | undefined;

  constructor(lease: Lease) {
    this.lease = lease;
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

export interface HandlerRun {
  handler: Handler;
  /** Handlers running at once. */
  concurrency: number;
  /** A handler's deadline, ms; undefined: none. */
  timeoutMs: number | undefined;
  /** Whether a lane may start another handler (false once the worker is stopping). */
  mayStart(): boolean;
}

/**
 * Runs the handlers of `items` in claim order, up to `concurrency` at once, **outside**
 * any transaction, each on the payload its claim read under its generation. Resolves
 * when every started handler has a result; an item a lane did not start (the worker
 * began stopping) stays `waiting`, to be released.
 *
 * A handler past its deadline gets its signal aborted and a temporary
 * `handler_timeout` failure as its result at once ({@link withDeadline}).
 */
export async function runHandlers(items: readonly Held[], run: HandlerRun): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && run.mayStart()) {
      const item = items[next++] as Held;
      if (item.state !== 'waiting') continue;
      item.state = 'running';
      item.startedAt = performance.now();
      const result = await runOne(item, run);
      item.result = result;
      if (item.state === 'running') item.state = 'finished';
    }
  };
  const lanes = Array.from({ length: Math.min(run.concurrency, items.length) }, lane);
  await Promise.all(lanes);
}

function runOne(item: Held, run: HandlerRun): Promise<HandlerResult> {
  const { lease } = item;
  const context: HandlerContext = {
    eventId: lease.eventId,
    generation: lease.generation,
    attempt: lease.attempt,
    get signal() {
      return item.signal;
    },
  };
  return withDeadline(runHandler(run.handler, lease.payload, context), run.timeoutMs, (reason) =>
    item.abort(reason),
  );
}
