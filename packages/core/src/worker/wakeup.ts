import type { Store, WakeListener } from '../driver/backend.ts';
import { nextDue } from '../queue/due.ts';
import type { MetricsRecorder } from './metrics-recorder.ts';

/**
 * When the worker looks for work again after finding none. Adaptive polling: right
 * after a busy batch it checks again after `minMs`, doubling on every empty look up to
 * `maxMs` (near-zero CPU when idle). It never sleeps past the earliest `available_at` /
 * `lease_until` it knows of, and a {@link Wakeup.wake} (a PostgreSQL NOTIFY from enqueue
 * or redrive) ends a sleep, {@link Wakeup.interrupt} (`stop()`) at once.
 *
 * **No thundering herd.** A NOTIFY reaches every idle worker of the schema; all of them
 * claiming at once would be one claim that finds the work and many that find nothing.
 * So a worker that {@link Wakeup.lostRace lost the race} (woken, and its claim came back
 * empty) reacts to the next notification only after a delay, doubled on every lost race
 * up to `maxWakeDelayMs` and jittered; the worker then looks (one read) before it claims.
 * A worker that gets work reacts at once again. So a trickle of small enqueues is claimed
 * by the few workers that react first, while a burst still reaches every worker, the
 * backed-off ones a few milliseconds later.
 */
export interface WakeupOptions {
  /** First idle delay, ms. Default 5. */
  minMs?: number;
  /** Longest idle delay, ms. Default 1000 (polling), 5000 with notifications. */
  maxMs?: number;
  /** Longest delay before a worker that keeps losing races reacts to a wake, ms. Default 200. */
  maxWakeDelayMs?: number;
  /** Uniform in [0, 1): the jitter of a delayed wake. Default Math.random. */
  random?: () => number;
}

/** The first delay of a worker that lost a race, ms; doubled per further loss. */
const FIRST_WAKE_DELAY_MS = 5;

export class Wakeup {
  readonly minMs: number;
  readonly maxMs: number;
  readonly maxWakeDelayMs: number;
  readonly #random: () => number;
  #idleMs: number;
  /** How long a wake waits before it ends the sleep, ms; 0 = at once. */
  #wakeDelayMs = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #wakeTimer: ReturnType<typeof setTimeout> | undefined;
  #resolve: ((woken: boolean) => void) | undefined;
  #pending = false;
  /** The last sleep was ended by a wake (or an interrupt), and no claim has looked since. */
  #woken = false;

  constructor(options: WakeupOptions = {}) {
    this.minMs = options.minMs ?? 5;
    this.maxMs = options.maxMs ?? 1000;
    this.maxWakeDelayMs = options.maxWakeDelayMs ?? 200;
    this.#random = options.random ?? Math.random;
    this.#idleMs = this.minMs;
  }

  /** How the worker learns of new work, for its start line. */
  describe(listening: boolean): string {
    return listening ? 'LISTEN/NOTIFY + polling' : `polling up to ${this.maxMs} ms`;
  }

  /** Work was found: the next empty look comes quickly again, and a wake acts at once. */
  busy(): void {
    this.#idleMs = this.minMs;
    this.#wakeDelayMs = 0;
  }

  /** Woken, the claim found nothing (another worker was first): react later next time. */
  lostRace(): void {
    this.#wakeDelayMs = Math.min(
      this.maxWakeDelayMs,
      this.#wakeDelayMs === 0 ? FIRST_WAKE_DELAY_MS : this.#wakeDelayMs * 2,
    );
  }

  /**
   * A claim after a sleep found `n` messages: woken and found nothing means another worker
   * was first ({@link lostRace}).
   */
  found(n: number): void {
    if (this.#woken && n === 0) this.lostRace();
    this.#woken = false;
  }

  /** True while a wake is delayed: the worker should look before it claims. */
  get backedOff(): boolean {
    return this.#wakeDelayMs > 0;
  }

  /**
   * New work may be there (a notification): ends the current sleep, after the delay of a
   * worker that lost its last race; or the next sleep, if none is running.
   */
  wake(): void {
    if (this.#resolve === undefined) {
      this.#pending = true;
      return;
    }
    if (this.#wakeDelayMs === 0) {
      this.#finish();
      return;
    }
    if (this.#wakeTimer !== undefined) return;
    // Jittered in [delay/2, delay): backed-off workers do not all look at the same moment.
    const delay = this.#wakeDelayMs * (0.5 + this.#random() / 2);
    this.#wakeTimer = setTimeout(() => this.#finish(), delay);
  }

  /** Ends the current sleep at once, or the next one (a stop). */
  interrupt(): void {
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
    this.#woken = await this.#sleep(dueAtMs);
    return this.#woken;
  }

  #sleep(dueAtMs: number | null): Promise<boolean> {
    const started = Date.now();
    let delay = this.#idleMs;
    if (dueAtMs !== null) delay = Math.max(0, Math.min(delay, dueAtMs - started));
    this.#idleMs = Math.min(this.#idleMs * 2, this.maxMs);
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => this.#finish(false), delay);
    });
  }

  #finish(woken = true): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#wakeTimer);
    this.#timer = undefined;
    this.#wakeTimer = undefined;
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.(woken);
  }
}

/**
 * Nothing was claimable: sleep, and before claiming again (a write transaction) peek
 * with one read statement whether anything is due, so an idle worker costs a read per
 * poll. Returns when something is due, a wake ended the sleep (a worker that lost its
 * last race looks first), a stop interrupted it, or `running()` turned false. `tick`
 * runs before each look (the background prune's schedule).
 */
export async function untilDue(
  store: Store,
  wakeup: Wakeup,
  running: () => boolean,
  tick: () => void,
): Promise<void> {
  while (running()) {
    tick();
    const due = await nextDue(store);
    const next = [due.readyAt, due.leaseExpiresAt].filter((t): t is number => t !== null);
    const earliest = next.length > 0 ? Math.min(...next) : null;
    if (earliest !== null && earliest <= due.now) return;
    // Integer seconds: due at second S means claimable once the clock reads S. The
    // times are on the store's clock (PostgreSQL: the server's), moved to the host's.
    const dueAtMs = earliest === null ? null : (earliest - due.now + store.clock()) * 1000;
    const woken = await wakeup.sleep(dueAtMs);
    if (woken && !wakeup.backedOff) return;
  }
}

/**
 * Where `store` has notifications (PostgreSQL): a LISTEN connection whose every NOTIFY
 * wakes `wakeup`. A lost connection is noted (the worker polls meanwhile, the listener
 * re-establishes it); when LISTEN fails at all the worker polls, says so, and this
 * resolves `undefined`, as it does where the store has no notifications.
 */
export async function listenForWakes(
  store: Store,
  wakeup: Wakeup,
  note: (event: string, message: string) => void,
  metrics: MetricsRecorder | undefined,
): Promise<WakeListener | undefined> {
  if (store.listen === undefined) return undefined;
  try {
    const listener = await store.listen(
      () => wakeup.wake(),
      (error) => note('listen_lost', error.message),
    );
    metrics?.watchNotifications(() => listener.live());
    return listener;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    note('listen_failed', `LISTEN failed (${why}); polling instead`);
    return undefined;
  }
}
