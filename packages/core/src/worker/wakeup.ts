/**
 * When the worker looks for work again after finding none. Adaptive polling: right
 * after a busy batch it checks again after `minMs`, doubling on every empty look up to
 * `maxMs` (near-zero CPU when idle). It never sleeps past the earliest `available_at` /
 * `lease_until` it knows of, and a {@link Wakeup.wake} (a PostgreSQL NOTIFY from enqueue
 * or redrive, or `stop()`) ends a sleep at once.
 */
export interface WakeupOptions {
  /** First idle delay, ms. Default 5. */
  minMs?: number;
  /** Longest idle delay, ms. Default 1000 (polling), 5000 with notifications. */
  maxMs?: number;
}

export class Wakeup {
  readonly minMs: number;
  readonly maxMs: number;
  #idleMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #resolve: ((woken: boolean) => void) | undefined;
  #pending = false;

  constructor(options: WakeupOptions = {}) {
    this.minMs = options.minMs ?? 5;
    this.maxMs = options.maxMs ?? 1000;
    this.#idleMs = this.minMs;
  }

  /** Work was found: the next empty look comes quickly again. */
  busy(): void {
    this.#idleMs = this.minMs;
  }

  /** Ends the current sleep now (or the next one, if none is running). */
  wake(): void {
    if (this.#resolve === undefined) {
      this.#pending = true;
      return;
    }
    this.#finish();
  }

  /**
   * Sleeps for the current idle delay, or until `dueAtMs` (epoch ms) when that is
   * sooner, or until {@link wake}; then doubles the idle delay up to `maxMs`.
   * Resolves `true` when {@link wake} ended it, `false` when the time ran out.
   */
  async sleep(dueAtMs: number | null): Promise<boolean> {
    const started = Date.now();
    let delay = this.#idleMs;
    if (dueAtMs !== null) delay = Math.max(0, Math.min(delay, dueAtMs - started));
    this.#idleMs = Math.min(this.#idleMs * 2, this.maxMs);
    if (this.#pending) {
      this.#pending = false;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => this.#finish(false), delay);
    });
  }

  #finish(woken = true): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.(woken);
  }
}
