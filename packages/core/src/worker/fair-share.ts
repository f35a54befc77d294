import type { Store } from '../driver/backend.ts';

/** How long after waiting for the SQLite write lock a worker keeps stepping aside, ms. */
const CONTENTION_WINDOW_MS = 200;
/** Within that window, a worker that did not wait steps aside at most this often, ms. */
const STEP_ASIDE_EVERY_MS = 10;
/** A loop that never waits still turns the event loop this often, ms (signals, heartbeats). */
const YIELD_EVERY_MS = 10;

/**
 * What the worker does between two batches so that it shares: the SQLite write lock with
 * other processes, and its own event loop with signals and heartbeat timers.
 *
 * SQLite: a worker that just committed can start its next `BEGIN IMMEDIATE` before a
 * process waiting in its busy handler wakes up, and starve it. So after a batch in which
 * this process waited for the lock, it steps aside for 1-3 ms; for a while after that
 * (the other process may be waiting now without our seeing it: the one holding the lock
 * never waits), at most every {@link STEP_ASIDE_EVERY_MS} too. Backends with concurrent
 * writers (PostgreSQL) never wait for a lock here and never step aside.
 *
 * Both: bun:sqlite runs synchronously, so a loop of transactions only ever awaits
 * resolved promises and a SIGINT or a heartbeat timer would never get its turn; at least
 * every {@link YIELD_EVERY_MS} the loop yields one event-loop turn (`setImmediate`).
 */
export class FairShare {
  readonly #store: Store;
  #busyBefore = 0;
  #contendedAt = Number.NEGATIVE_INFINITY;
  #steppedAsideAt = Number.NEGATIVE_INFINITY;
  #yieldedAt = performance.now();

  constructor(store: Store) {
    this.#store = store;
  }

  /** Called before a batch's claim: the lock waits counted from here belong to the batch. */
  begin(): void {
    this.#busyBefore = this.#store.busyRetries();
  }

  /**
   * Called after the batch is recorded: the pause to await when stepping aside or
   * yielding is due, else `undefined` (most batches: no promise to wait on).
   */
  end(): Promise<unknown> | undefined {
    const now = performance.now();
    const waited = this.#store.busyRetries() > this.#busyBefore;
    if (waited) this.#contendedAt = now;
    const recently = now - this.#contendedAt < CONTENTION_WINDOW_MS;
    if (waited || (recently && now - this.#steppedAsideAt >= STEP_ASIDE_EVERY_MS)) {
      this.#steppedAsideAt = now;
      this.#yieldedAt = now;
      return Bun.sleep(1 + Math.random() * 2);
    }
    if (now - this.#yieldedAt >= YIELD_EVERY_MS) {
      this.#yieldedAt = now;
      return new Promise((resolve) => setImmediate(resolve));
    }
    return undefined;
  }
}
