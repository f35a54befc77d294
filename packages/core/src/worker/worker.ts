import type { Store } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import type { Handler } from '../handler/contract.ts';
import { type HandlerResult, runHandler } from '../handler/run.ts';
import { claimMany } from '../queue/claim.ts';
import { complete } from '../queue/complete.ts';
import { nextDue } from '../queue/due.ts';
import { releaseMany } from '../queue/release.ts';
import type { ApplyOutcome, Lease } from '../types.ts';
import { startHeartbeat } from './heartbeat.ts';
import { silentLog, type WorkerLog } from './log.ts';
import type { WorkerMetrics } from './metrics.ts';
import { type PruneSchedule, ScheduledPrune } from './prune-schedule.ts';
import { Wakeup } from './wakeup.ts';
import { DEFAULT_BATCH } from './work.ts';

export interface WorkerOptions {
  /** Messages per claim (and per settle transaction). Default {@link DEFAULT_BATCH} (100). */
  batch?: number;
  /** Lease length in seconds; heartbeats renew it every third. Default: the store's (30). */
  leaseSeconds?: number;
  /** Handlers running at once (each message still fenced on its own). Default 1. */
  concurrency?: number;
  /** Stop once nothing is claimable now (`onceq work` semantics). Default false: run until stopped. */
  drain?: boolean;
  /** Stop after this many claimed messages (with `drain`). Default: no limit. */
  max?: number;
  /** Longest idle poll, ms. Default 1000, or 5000 where the store has LISTEN/NOTIFY. */
  pollMaxMs?: number;
  /** Where the worker's lines go. Default: nowhere. */
  log?: WorkerLog;
  /** Counters and histograms to feed. Default: none. */
  metrics?: WorkerMetrics;
  /** Prune on a schedule, in the background between claims ({@link ScheduledPrune}). Default: never. */
  prune?: PruneSchedule;
}

export interface WorkerSummary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Leases found lost (refused heartbeat or refused ACK): nothing of them was written. */
  lost: number;
  /** Claimed but unstarted messages given back at shutdown, attempts not spent. */
  released: number;
  /** Successful lease extensions. */
  extended: number;
}

export interface StopOptions {
  /** How long in-flight handlers may take to finish, ms. Default 30000. */
  timeoutMs?: number;
}

/** How a worker ended. */
export interface StopResult {
  /** False when the timeout ran out or {@link Worker.forceStop} was called. */
  graceful: boolean;
  /** Messages whose handlers were abandoned: their leases expire and are recovered (a silent death). */
  abandoned: number;
  summary: WorkerSummary;
}

type ItemState = 'waiting' | 'running' | 'finished' | 'lost';

interface Item {
  lease: Lease;
  controller: AbortController;
  state: ItemState;
  result?: HandlerResult;
  startedAt: number;
}

/**
 * onceq as a long-running service (graphile-worker's Worker, pg-boss's `stop({ graceful,
 * timeout })`, River's heartbeats): claims a batch, runs up to `concurrency` handlers at
 * once **outside** any transaction, keeps the batch's leases alive with heartbeats, then
 * records every result with a fenced ACK at the generation it ran under
 * ({@link complete}: on PostgreSQL the money effects are one fenced effect + ACK
 * statement, no read in front), and looks again. Idle, it sleeps adaptively until new work is
 * due, a NOTIFY arrives (PostgreSQL) or it is stopped.
 *
 * Shutdown has two stages. {@link stop}: claim nothing more, let running handlers finish
 * and record them, **release** the claimed-but-unstarted messages (ready now, attempts
 * given back). If `timeoutMs` runs out, or {@link forceStop} is called (a second
 * signal), the running handlers' signals are aborted and the worker ends at once: those
 * leases expire and are recovered later as silent deaths.
 */
export class Worker {
  readonly #store: Store;
  readonly #handler: Handler;
  readonly #batch: number;
  readonly #leaseSeconds: number;
  readonly #concurrency: number;
  readonly #drain: boolean;
  readonly #max: number;
  readonly #log: WorkerLog;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #wakeup: Wakeup;
  readonly #pruner: ScheduledPrune | undefined;
  readonly #summary: WorkerSummary = {
    claimed: 0,
    done: 0,
    retried: 0,
    dead: 0,
    lost: 0,
    released: 0,
    extended: 0,
  };
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #forced = false;
  #items: Item[] = [];
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #storeError: string | undefined;
  #forceNow: (() => void) | undefined;
  readonly #forcedSignal: Promise<void>;

  constructor(store: Store, handler: Handler, options: WorkerOptions = {}) {
    this.#store = store;
    this.#handler = handler;
    this.#batch = positive(options.batch ?? DEFAULT_BATCH, 'batch');
    this.#leaseSeconds = positive(options.leaseSeconds ?? store.protocol.leaseSeconds, 'lease');
    this.#concurrency = positive(options.concurrency ?? 1, 'concurrency');
    this.#drain = options.drain ?? false;
    this.#max = options.max ?? Number.POSITIVE_INFINITY;
    this.#log = options.log ?? silentLog;
    this.#metrics = options.metrics;
    this.#pruner =
      options.prune === undefined ? undefined : new ScheduledPrune(store, options.prune, this.#log);
    const notifies = store.listen !== undefined;
    this.#wakeup = new Wakeup({ maxMs: options.pollMaxMs ?? (notifies ? 5000 : 1000) });
    this.#forcedSignal = new Promise((resolve) => {
      this.#forceNow = resolve;
    });
  }

  /** Running counts since start. */
  get summary(): Readonly<WorkerSummary> {
    return this.#summary;
  }

  get state(): 'new' | 'running' | 'stopping' | 'stopped' {
    return this.#state;
  }

  /** `true` while running with a working store, else why not (for `/healthz`). */
  health(): string | true {
    if (this.#state !== 'running') return `worker is ${this.#state}`;
    return this.#storeError === undefined ? true : `store error: ${this.#storeError}`;
  }

  /**
   * Starts the loop (and, where the store has notifications, its LISTEN connection; if
   * that fails the worker polls and says so). Resolves once running.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker already ${this.#state}`);
    this.#state = 'running';
    if (this.#store.listen !== undefined && !this.#drain) {
      try {
        this.#unlisten = await this.#store.listen(
          () => this.#wakeup.wake(),
          (error) =>
            this.#log.write('listen_lost', `${error.message}; falling back to polling`, {}),
        );
      } catch (error) {
        this.#log.write('listen_failed', `LISTEN failed (${describe(error)}); polling instead`);
      }
    }
    this.#log.write(
      'start',
      `worker started on ${this.#store.location} (${this.#store.kind}): batch ${this.#batch}, concurrency ${this.#concurrency}, lease ${this.#leaseSeconds} s, wake-up ${this.#unlisten ? 'LISTEN/NOTIFY + polling' : `polling up to ${this.#wakeup.maxMs} ms`}`,
      {
        store: this.#store.location,
        backend: this.#store.kind,
        batch: this.#batch,
        concurrency: this.#concurrency,
        lease_seconds: this.#leaseSeconds,
      },
    );
    if (this.#pruner !== undefined) {
      const { doneOlderThanSeconds: done, deadOlderThanSeconds: dead } = this.#pruner.ages();
      this.#log.write(
        'prune_schedule',
        `pruning every ${this.#pruner.everySeconds} s: ${[done === undefined ? null : `done older than ${done} s`, dead === undefined ? null : `dead older than ${dead} s`].filter((x) => x !== null).join(', ')}`,
        {
          every_seconds: this.#pruner.everySeconds,
          done_older_than: done ?? null,
          dead_older_than: dead ?? null,
        },
      );
    }
    this.#loop = this.#run();
  }

  /** Resolves when the loop ended by itself (drain mode) or after a stop. */
  async finished(): Promise<WorkerSummary> {
    await this.#loop;
    return this.#summary;
  }

  /**
   * Graceful stop: no new claims; running handlers finish and are recorded; unstarted
   * claimed messages are released. After `timeoutMs` (default 30000) it forces the stop.
   */
  async stop(options: StopOptions = {}): Promise<StopResult> {
    if (this.#state === 'new') {
      this.#state = 'stopped';
      return { graceful: true, abandoned: 0, summary: this.#summary };
    }
    if (this.#state === 'running') this.#state = 'stopping';
    this.#wakeup.wake();
    const timeoutMs = options.timeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const ended = await Promise.race([
      (this.#loop ?? Promise.resolve()).then(() => 'ended' as const),
      this.#forcedSignal.then(() => 'forced' as const),
      timedOut,
    ]);
    clearTimeout(timer);
    if (ended === 'ended' && !this.#forced) return this.#end(true, 0);
    return this.#end(false, this.#abandon());
  }

  /** Immediate stop (a second signal): aborts running handlers and records nothing more. */
  forceStop(): void {
    if (this.#state === 'running') this.#state = 'stopping';
    this.#abandon();
    this.#wakeup.wake();
    this.#forceNow?.();
  }

  #abandon(): number {
    this.#forced = true;
    const open = this.#items.filter((i) => i.state === 'running' || i.state === 'waiting');
    for (const item of this.#items) item.controller.abort(new Error('worker stopped'));
    return open.length;
  }

  async #end(graceful: boolean, abandoned: number): Promise<StopResult> {
    this.#state = 'stopped';
    await this.#pruner?.stop();
    await this.#unlisten?.();
    this.#unlisten = undefined;
    return { graceful, abandoned, summary: this.#summary };
  }

  async #run(): Promise<void> {
    while (this.#state === 'running' && this.#summary.claimed < this.#max) {
      this.#pruner?.tick();
      try {
        const leases = await claimMany(this.#store, {
          limit: Math.min(this.#batch, this.#max - this.#summary.claimed),
          leaseSeconds: this.#leaseSeconds,
        });
        this.#storeError = undefined;
        if (leases.length > 0) {
          this.#wakeup.busy();
          await this.#process(leases);
          continue;
        }
        if (this.#drain) break;
        await this.#idle();
      } catch (error) {
        const why = describe(error);
        if (this.#storeError !== why) this.#log.write('store_error', `${why}; retrying`);
        this.#storeError = why;
        await this.#wakeup.sleep(null);
      }
    }
    if (this.#state === 'running') await this.#end(true, 0);
  }

  /**
   * Nothing was claimable: sleep, and before claiming again (a write transaction) peek
   * with one read statement whether anything is due, so an idle worker costs a read per
   * poll. Returns when something is due, a NOTIFY or stop() woke it, or it stopped.
   */
  async #idle(): Promise<void> {
    while (this.#state === 'running') {
      this.#pruner?.tick();
      const due = await nextDue(this.#store);
      const next = [due.readyAt, due.leaseExpiresAt].filter((t): t is number => t !== null);
      const earliest = next.length > 0 ? Math.min(...next) : null;
      if (earliest !== null && earliest <= this.#store.clock()) return;
      // Integer seconds: due at second S means claimable once the clock reads S.
      if (await this.#wakeup.sleep(earliest === null ? null : earliest * 1000)) return;
    }
  }

  async #process(leases: Lease[]): Promise<void> {
    const started = performance.now();
    const claimedAt = this.#store.clock();
    this.#summary.claimed += leases.length;
    for (const lease of leases) {
      this.#metrics?.queueWait.observe(Math.max(0, claimedAt - lease.availableAt));
    }
    const items: Item[] = leases.map((lease) => ({
      lease,
      controller: new AbortController(),
      state: 'waiting',
      startedAt: 0,
    }));
    this.#items = items;
    const lostOnce = new Set<string>();
    const markLost = (errors: readonly LeaseLostError[]) => {
      for (const error of errors) {
        if (lostOnce.has(error.eventId)) continue;
        lostOnce.add(error.eventId);
        this.#summary.lost++;
        this.#metrics?.leaseLost.inc();
        this.#metrics?.processed.inc({ outcome: 'lost' });
        this.#log.write('lease_lost', error.message, {
          event_id: error.eventId,
          generation: error.generation,
        });
      }
    };
    const stopHeartbeat = startHeartbeat(
      this.#store,
      () => items.filter((i) => i.state !== 'lost').map((i) => i.lease),
      this.#leaseSeconds,
      {
        extended: (n) => {
          this.#summary.extended += n;
          this.#metrics?.extended.inc(n);
        },
        lost: (errors) => {
          for (const error of errors) {
            const item = items.find((i) => i.lease.eventId === error.eventId);
            if (item === undefined) continue;
            item.state = 'lost';
            item.controller.abort(error);
          }
          markLost(errors);
        },
        failed: (error) => this.#log.write('heartbeat_failed', describe(error)),
      },
    );

    let next = 0;
    const lane = async () => {
      while (this.#state === 'running' && next < items.length) {
        const item = items[next++] as Item;
        if (item.state !== 'waiting') continue;
        item.state = 'running';
        item.startedAt = performance.now();
        item.result = await runHandler(this.#handler, item.lease.payload, {
          eventId: item.lease.eventId,
          generation: item.lease.generation,
          attempt: item.lease.attempt,
          signal: item.controller.signal,
        });
        if (item.state === 'running') item.state = 'finished';
      }
    };
    const lanes = Array.from({ length: Math.min(this.#concurrency, items.length) }, lane);
    const allDone = Promise.all(lanes);
    // A forced stop does not wait for handlers: their leases are left to expire.
    await Promise.race([allDone, this.#forcedSignal]);
    await stopHeartbeat();
    if (this.#forced) return;

    const unstarted = items.filter((i) => i.state === 'waiting');
    if (unstarted.length > 0) {
      const { released, lost } = await releaseMany(
        this.#store,
        unstarted.map((i) => i.lease),
      );
      this.#summary.released += released.length;
      this.#metrics?.released.inc(released.length);
      if (released.length > 0) {
        this.#log.write(
          'release',
          `released ${released.length} claimed but unstarted message${released.length === 1 ? '' : 's'} (attempts not spent): ${released.join(', ')}`,
          { released: released.length },
        );
      }
      markLost(lost);
    }
    // Lost items are settled too: the fence refuses their late ACK (counted once above).
    // Every handler ran on the payload our claim read: one fenced write of all results,
    // no read in front (complete).
    const ran = items.filter((i) => i.result !== undefined);
    const { outcomes, lost } = await complete(
      this.#store,
      ran.map((i) => ({ lease: i.lease, result: i.result as HandlerResult })),
    );
    const settledAt = performance.now();
    markLost(lost);
    for (const outcome of outcomes) this.#count(outcome);
    for (const item of ran)
      this.#metrics?.handlerToAck.observe((settledAt - item.startedAt) / 1000);
    const s = this.#summary;
    this.#log.write(
      'batch',
      `claimed ${leases.length}: ${count(outcomes, 'done')} done, ${count(outcomes, 'retry')} retried, ${count(outcomes, 'dead')} dead, ${lostOnce.size} lost, ${unstarted.length} released (${Math.round(settledAt - started)} ms; totals: ${s.done} done, ${s.retried} retried, ${s.dead} dead, ${s.lost} lost)`,
      {
        claimed: leases.length,
        done: count(outcomes, 'done'),
        retried: count(outcomes, 'retry'),
        dead: count(outcomes, 'dead'),
        lost: lostOnce.size,
        released: unstarted.length,
        ms: Math.round(settledAt - started),
      },
    );
    this.#items = [];
  }

  #count(outcome: ApplyOutcome): void {
    if (outcome.outcome === 'done') this.#summary.done++;
    else if (outcome.outcome === 'retry') this.#summary.retried++;
    else {
      this.#summary.dead++;
      this.#log.write(
        'dead',
        `${outcome.eventId} went to the DLQ: ${outcome.code}: ${outcome.detail}`,
        {
          event_id: outcome.eventId,
          code: outcome.code,
        },
      );
    }
    this.#metrics?.processed.inc({ outcome: outcome.outcome });
  }
}

function count(outcomes: readonly ApplyOutcome[], kind: ApplyOutcome['outcome']): number {
  return outcomes.filter((o) => o.outcome === kind).length;
}

function positive(n: number, name: string): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`worker ${name} must be a positive whole number, got ${n}`);
  }
  return n;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
