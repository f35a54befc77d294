import type { Store } from '../driver/backend.ts';
import { localTime } from '../local-time.ts';
import { checkDedupWindow, type PruneResult, prune } from '../maintenance/prune.ts';
import type { WorkerLog } from './log.ts';

/** Default ages for a scheduled prune when neither is given: done 30 days, dead 90 days. */
export const DEFAULT_SCHEDULED_DONE_AGE = 30 * 86_400;
export const DEFAULT_SCHEDULED_DEAD_AGE = 90 * 86_400;

/** `onceq worker --prune-every`: how often, and what (the same options as `onceq prune`). */
export interface PruneSchedule {
  /** Seconds between two prunes, on the store's clock. The first runs when the worker starts. */
  everySeconds: number;
  /**
   * Prune done messages finished longer ago than this. When neither age is given, both
   * defaults apply: {@link DEFAULT_SCHEDULED_DONE_AGE} (30 days) and
   * {@link DEFAULT_SCHEDULED_DEAD_AGE} (90 days); when only one is given, only that state
   * is pruned.
   */
  doneOlderThanSeconds?: number;
  /** Prune dead messages that died longer ago than this (they leave the DLQ). */
  deadOlderThanSeconds?: number;
  /**
   * The dedup window: also forget tombstones of messages finished longer ago than this
   * (at least 3 days; see `PruneOptions.forgetOlderThanSeconds`). Default: never. It
   * comes on top of the ages above (their defaults apply when neither is given).
   */
  forgetOlderThanSeconds?: number;
  /** Rows per write transaction; default prune's (500). */
  chunkSize?: number;
  /** Share of wall time the prune may keep busy; default prune's (0.1). */
  dutyCycle?: number;
}

/**
 * Runs {@link prune} on a schedule inside a worker. The worker calls {@link tick} between
 * its claims (and while idle); a due prune starts **in the background** on the same
 * store and paces itself with its duty cycle, so the worker keeps claiming while it runs
 * (on SQLite the chunks and the claims take turns on the one connection). One prune at a
 * time: a tick while one runs does nothing. Each run is logged (`prune`, or
 * `prune_failed`: a failed prune never stops the worker; the next is tried on schedule).
 */
export class ScheduledPrune {
  readonly #store: Store;
  readonly #schedule: PruneSchedule;
  readonly #log: WorkerLog;
  readonly #abort = new AbortController();
  #next: number;
  #running: Promise<void> | undefined;
  #runs = 0;

  constructor(store: Store, schedule: PruneSchedule, log: WorkerLog) {
    if (!Number.isInteger(schedule.everySeconds) || schedule.everySeconds < 1) {
      throw new RangeError(
        `prune interval must be a whole number of seconds ≥ 1, got ${schedule.everySeconds}`,
      );
    }
    if (schedule.forgetOlderThanSeconds !== undefined) {
      checkDedupWindow(schedule.forgetOlderThanSeconds, false);
    }
    this.#store = store;
    this.#schedule = schedule;
    this.#log = log;
    this.#next = store.clock();
  }

  /** Seconds between two prunes. */
  get everySeconds(): number {
    return this.#schedule.everySeconds;
  }

  /** Prunes started so far. */
  get runs(): number {
    return this.#runs;
  }

  /** The ages used: the given ones, or both defaults when none was given. */
  ages(): { doneOlderThanSeconds?: number; deadOlderThanSeconds?: number } {
    const { doneOlderThanSeconds: done, deadOlderThanSeconds: dead } = this.#schedule;
    if (done === undefined && dead === undefined) {
      return {
        doneOlderThanSeconds: DEFAULT_SCHEDULED_DONE_AGE,
        deadOlderThanSeconds: DEFAULT_SCHEDULED_DEAD_AGE,
      };
    }
    return {
      ...(done === undefined ? {} : { doneOlderThanSeconds: done }),
      ...(dead === undefined ? {} : { deadOlderThanSeconds: dead }),
    };
  }

  /** Starts a prune in the background when one is due and none is running. */
  tick(): void {
    if (this.#running !== undefined || this.#abort.signal.aborted) return;
    const now = this.#store.clock();
    if (now < this.#next) return;
    this.#next = now + this.#schedule.everySeconds;
    this.#runs++;
    const started = performance.now();
    this.#running = prune(this.#store, {
      ...this.ages(),
      ...(this.#schedule.forgetOlderThanSeconds === undefined
        ? {}
        : { forgetOlderThanSeconds: this.#schedule.forgetOlderThanSeconds }),
      ...(this.#schedule.chunkSize === undefined ? {} : { chunkSize: this.#schedule.chunkSize }),
      ...(this.#schedule.dutyCycle === undefined ? {} : { dutyCycle: this.#schedule.dutyCycle }),
      signal: this.#abort.signal,
    })
      .then((result) => this.#logResult(result, performance.now() - started))
      .catch((error: unknown) => {
        const why = error instanceof Error ? error.message : String(error);
        this.#log.write('prune_failed', `scheduled prune failed: ${why}; next try on schedule`);
      })
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Stops a running prune between two chunks and waits for it. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  #logResult(result: PruneResult, ms: number): void {
    const parts: string[] = [];
    if (result.doneBefore !== null)
      parts.push(`${result.done} done (finished before ${localTime(result.doneBefore)})`);
    if (result.deadBefore !== null)
      parts.push(`${result.dead} dead (died before ${localTime(result.deadBefore)})`);
    const forgot =
      result.forgottenBefore === null
        ? ''
        : `, forgot ${result.forgotten} tombstones (finished before ${localTime(result.forgottenBefore)})`;
    this.#log.write(
      'prune',
      `pruned ${parts.join(' and ')}${forgot} in ${Math.round(ms)} ms; next prune in ${this.#schedule.everySeconds} s`,
      {
        done: result.done,
        dead: result.dead,
        done_before: result.doneBefore,
        dead_before: result.deadBefore,
        ...(result.forgottenBefore === null
          ? {}
          : { forgotten: result.forgotten, forgotten_before: result.forgottenBefore }),
        ms: Math.round(ms),
      },
    );
  }
}
