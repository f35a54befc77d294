import type { Store, WakeListener } from '../driver/backend.ts';
import { errorText } from '../errors.ts';
import type { Handler } from '../handler/contract.ts';
import { handlerStore } from '../handler/run.ts';
import { Claimer } from './claimer.ts';
import { type Completer, chooseCompleter } from './completer.ts';
import { watchConnections } from './connections.ts';
import { FairShare } from './fair-share.ts';
import { type Heartbeat, startHeartbeat } from './heartbeat.ts';
import { type HandlerRun, type Held, runHandlers } from './held.ts';
import { silentLog, type WorkerLog } from './log.ts';
import {
  STUCK_AFTER_LEASES,
  type StopOptions,
  type StopResult,
  type WorkerOptions,
  type WorkerSettings,
  type WorkerSummary,
  withPolicy,
  workerSettings,
} from './options.ts';
import { ScheduledPrune } from './prune-schedule.ts';
import { Recorder } from './recorder.ts';
import { stuck, Tally } from './tally.ts';
import { listenForWakes, untilDue, Wakeup } from './wakeup.ts';

export type {
  StopOptions,
  StopResult,
  WorkerOptions,
  WorkerQueueOptions,
  WorkerSummary,
} from './options.ts';
export { DEFAULT_BATCH, STUCK_AFTER_LEASES } from './options.ts';

/**
 * The one worker loop of onceq (River's producer and completer): `onceq work` is it in
 * drain mode, `onceq worker` runs it until stopped. It is made of two parts:
 *
 * - the {@link Claimer} claims batches of up to `batch` messages (lazy recovery first),
 *   counts `max`, and holds every claimed lease from its claim on, so one heartbeat for
 *   the worker's life extends every held lease each third of the lease;
 * - the {@link Completer}, chosen once from the backend's capabilities, records each
 *   handled batch through the one result writer, fenced at the generation it ran under,
 *   and claims the next batch with that write: the transaction completer (SQLite) in the
 *   record's own transaction, waiting for it; the pipelined completer (PostgreSQL) on the
 *   side, while the next batch is handled, with a claim ahead when no record brings one.
 *
 * One turn of the loop: take the next batch from the completer; run up to
 * `concurrency` handlers **outside** any transaction, each on the payload its claim read
 * under its generation (docs/worker.md says why that stays exactly-once), each with its
 * optional deadline; hand the batch to the completer; share ({@link FairShare}: on
 * SQLite step aside after lock waits so a second process gets the write lock; always
 * let signals and timers in). Idle, it sleeps adaptively until new work is due, a NOTIFY
 * arrives (PostgreSQL) or it is stopped; in drain mode it ends instead. Shutdown has
 * two stages: {@link stop}, then {@link forceStop}.
 */
export class Worker {
  readonly #store: Store;
  readonly #settings: WorkerSettings;
  readonly #tally: Tally;
  readonly #claimer: Claimer;
  readonly #completer: Completer;
  readonly #wakeup: Wakeup;
  readonly #fair: FairShare;
  readonly #pruner: ScheduledPrune | undefined;
  readonly #metrics: WorkerOptions['metrics'];
  readonly #log: WorkerLog;
  /** How a batch's handlers run, by queue: its handler, the worker's concurrency and deadline. */
  readonly #handlerRuns: ReadonlyMap<string, HandlerRun>;
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #forced = false;
  #heartbeat: Heartbeat | undefined;
  #loop: Promise<void> | undefined;
  /** Settles once start() set the loop going, or stop() ended a worker never started. */
  readonly #begun = Promise.withResolvers<void>();
  #listener: WakeListener | undefined;
  #storeError: string | undefined;
  /** Ends the wait for the current batch's handlers (a forced stop does not wait). */
  #handlersDone: (() => void) | undefined;

  /**
   * A worker on `store` running `handler` (the handler of every queue that names none of
   * its own in `options.queues`).
   */
  constructor(storeGiven: Store, handler: Handler, options: WorkerOptions = {}) {
    // Every claim, failure and recovery of a queue follows that queue's policy.
    const settings = workerSettings(storeGiven, handler, options);
    const store = withPolicy(storeGiven, options);
    this.#store = store;
    this.#settings = settings;
    store.sizePool?.(settings.concurrency);
    this.#metrics = options.metrics;
    const log = options.log ?? silentLog;
    this.#log = log;
    this.#tally = new Tally(log, options.metrics, options.onProgress);
    const notifies = store.listen !== undefined;
    this.#wakeup = new Wakeup({ maxMs: options.pollMaxMs ?? (notifies ? 5000 : 1000) });
    const running = () => this.#state === 'running';
    this.#claimer = new Claimer(
      { ...settings, running, busy: () => this.#wakeup.busy() },
      this.#tally,
    );
    const beat = () => this.#heartbeat?.running();
    const policies = new Map(settings.queues.map((q) => [q.name, q.store]));
    const recorder = new Recorder(store, policies, this.#claimer, this.#tally, beat);
    this.#completer = chooseCompleter(store, options.claimAhead ?? true, this.#claimer, recorder);
    const context = handlerStore(store);
    this.#handlerRuns = new Map(
      settings.queues.map((q) => [
        q.name,
        { ...settings, handler: q.handler, store: context, mayStart: running },
      ]),
    );
    this.#fair = new FairShare(store);
    this.#pruner = options.prune && new ScheduledPrune(store, options.prune, log);
  }

  /** Running counts since start. */
  get summary(): Readonly<WorkerSummary> {
    return this.#tally.summary;
  }

  get state(): 'new' | 'running' | 'stopping' | 'stopped' {
    return this.#state;
  }

  /**
   * `true` while running with a working store that makes progress, else why not (for
   * `/healthz`): stopped, a store error, or holding work while settling nothing for
   * {@link STUCK_AFTER_LEASES} leases (a handler that never returns: heartbeats would
   * keep its lease forever).
   */
  health(): string | true {
    if (this.#state !== 'running') return `worker is ${this.#state}`;
    if (this.#storeError !== undefined) return `store error: ${this.#storeError}`;
    const quietMs = performance.now() - this.#tally.progressAt;
    const { held } = this.#claimer;
    const { leaseSeconds } = this.#settings;
    if (held.size > 0 && quietMs >= STUCK_AFTER_LEASES * leaseSeconds * 1000) {
      return stuck(quietMs, leaseSeconds, STUCK_AFTER_LEASES, [...held]);
    }
    return true;
  }

  /**
   * Starts the loop (and, where the store has notifications, its LISTEN connection; if
   * that fails the worker polls and says so). Resolves once running.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker already ${this.#state}`);
    this.#state = 'running';
    const tally = this.#tally;
    if (!this.#settings.drain) {
      const note = (event: string, message: string) => tally.note(event, message);
      this.#listener = await listenForWakes(this.#store, this.#wakeup, note, this.#metrics);
    }
    const wake = this.#wakeup.describe(this.#listener !== undefined);
    tally.started(this.#store, this.#settings, this.#completer.kind === 'pipelined', wake);
    tally.pruneSchedule(this.#pruner);
    watchConnections(this.#store, this.#log, this.#metrics);
    const shortestLease = Math.min(
      ...this.#settings.queues.map((q) => q.store.protocol.leaseSeconds),
    );
    this.#heartbeat = startHeartbeat(this.#store, this.#claimer, shortestLease, (error) =>
      tally.note('heartbeat_failed', errorText(error)),
    );
    tally.progressAt = performance.now();
    this.#loop = this.#run();
    // Awaited by finished() and stop(); a drain that fails rejects there, not as unhandled.
    this.#loop.catch(() => {});
    this.#begun.resolve();
  }

  /**
   * Resolves when the loop ended by itself (drain mode) or after a stop; rejects when a
   * drain failed. Called before {@link start}, it waits for the worker to start and end.
   */
  async finished(): Promise<WorkerSummary> {
    await this.#begun.promise;
    await this.#loop;
    return this.#tally.summary;
  }

  /**
   * Graceful stop: no new claims; running handlers finish and are recorded; unstarted
   * claimed messages are **released** (ready now, attempts given back). After `timeoutMs`
   * (default 30000) it forces the stop.
   */
  async stop(options: StopOptions = {}): Promise<StopResult> {
    if (this.#state === 'new') {
      this.#state = 'stopped';
      this.#begun.resolve();
      return this.#result();
    }
    if (this.#state === 'running') this.#state = 'stopping';
    this.#wakeup.interrupt();
    // A loop that failed has ended all the same; its error is the drain's, not the stop's.
    const timer = setTimeout(() => this.forceStop(), options.timeoutMs ?? 30_000);
    await (this.#loop ?? Promise.resolve()).catch(() => {});
    clearTimeout(timer);
    return this.#result();
  }

  /**
   * Immediate stop (a second signal): aborts running handlers' signals and stops waiting
   * for them; finished results are still recorded and unstarted messages released. The
   * running ones are abandoned: their leases expire and are recovered as silent deaths.
   */
  forceStop(): void {
    if (this.#state === 'running') this.#state = 'stopping';
    this.#forced = true;
    for (const held of this.#claimer.held) {
      if (held.state === 'running') held.abort(new Error('worker stopped'));
    }
    this.#wakeup.interrupt();
    this.#handlersDone?.();
  }

  #result(): StopResult {
    const { abandoned, summary } = this.#tally;
    return {
      graceful: !this.#forced,
      abandoned: abandoned.length,
      abandonedLeases: abandoned,
      summary,
    };
  }

  /** The loop: take a batch, handle it, hand it to the completer; idle (or end) when none. */
  async #run(): Promise<void> {
    try {
      while (this.#state === 'running') {
        this.#tick();
        this.#fair.begin();
        try {
          const batch = await this.#completer.next();
          this.#storeError = undefined;
          this.#wakeup.found(batch.length);
          if (batch.length === 0) {
            if (this.#settings.drain || this.#claimer.exhausted) break;
            await untilDue(this.#store, this.#wakeup, () => this.#state === 'running', this.#tick);
            continue;
          }
          const startedAt = performance.now();
          await this.#handle(batch);
          await this.#completer.record(batch, startedAt);
          const pause = this.#fair.end();
          if (pause !== undefined) await pause;
        } catch (error) {
          if (this.#settings.drain) {
            // Nothing of a failed drain runs on after it rejected.
            await this.#completer.finish().catch(() => {});
            throw error;
          }
          this.#failed(error);
          await this.#wakeup.sleep(null);
        }
      }
      await this.#completer.finish();
    } finally {
      await this.#end();
    }
  }

  /** Between claims: a scheduled prune starts in the background when due. */
  readonly #tick = () => this.#pruner?.tick();

  /**
   * Runs the batch's handlers, its queue's (a batch is claimed from one queue); a forced
   * stop stops waiting (the record abandons them).
   */
  async #handle(batch: readonly Held[]): Promise<void> {
    const run = this.#handlerRuns.get((batch[0] as Held).queue) as HandlerRun;
    const handled = runHandlers(batch, run);
    if (handled === undefined) return;
    await new Promise<void>((resolve) => {
      this.#handlersDone = resolve;
      if (this.#forced) resolve();
      handled.then(resolve);
    });
    this.#handlersDone = undefined;
  }

  /** A store error outside a drain: said once per distinct error, then retried. */
  #failed(error: unknown): void {
    const why = errorText(error);
    if (this.#storeError !== why) this.#tally.note('store_error', `${why}; retrying`);
    this.#storeError = why;
  }

  async #end(): Promise<void> {
    this.#state = 'stopped';
    await this.#heartbeat?.stop();
    await this.#pruner?.stop();
    await this.#listener?.close();
    this.#listener = undefined;
    this.#tally.stopped(this.#result());
  }
}
