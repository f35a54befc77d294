import type pg from 'pg';

/** One caller waiting for a pooled connection. */
export interface Waiter {
  readonly urgent: boolean;
  /** Served, timed out or failed: a connection must never be handed to it again. */
  settled: boolean;
  resolve(client: pg.PoolClient): void;
  reject(error: unknown): void;
}

/**
 * The callers waiting for a connection of the pool, in the order they are served:
 * urgent callers (lease extensions, give-backs) behind earlier urgent ones and ahead of
 * everyone else, the rest first come first served. A caller that waits longer than
 * `waitMs` leaves the queue with pg-pool's own timeout words (errors.ts maps them to
 * the pool-wait sentence).
 */
export class Waiters {
  readonly #queue: Waiter[] = [];
  readonly #waitMs: number;

  constructor(waitMs: number) {
    this.#waitMs = waitMs;
  }

  get length(): number {
    return this.#queue.length;
  }

  /** Queues a caller; resolves with the connection it is handed. */
  wait(urgent: boolean): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiter.settled = true;
        const at = this.#queue.indexOf(waiter);
        if (at >= 0) this.#queue.splice(at, 1);
        reject(new Error('timeout exceeded when trying to connect'));
      }, this.#waitMs);
      const waiter: Waiter = {
        urgent,
        settled: false,
        resolve: (client) => {
          waiter.settled = true;
          clearTimeout(timer);
          resolve(client);
        },
        reject: (error) => {
          waiter.settled = true;
          clearTimeout(timer);
          reject(error);
        },
      };
      const at = urgent ? this.#queue.findIndex((w) => !w.urgent) : -1;
      if (at < 0) this.#queue.push(waiter);
      else this.#queue.splice(at, 0, waiter);
    });
  }

  /** The next caller to serve, taken out of the queue. */
  next(): Waiter | undefined {
    return this.#queue.shift();
  }

  /** Puts a caller taken by {@link next} back at the head (its connection did not open). */
  putBack(waiter: Waiter): void {
    this.#queue.unshift(waiter);
  }

  /** Fails every waiting caller with `error`. */
  failAll(error: unknown): void {
    for (const waiter of this.#queue.splice(0)) waiter.reject(error);
  }
}
