import type { Store, WakeListener } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import type { Handler } from '../handler/contract.ts';
import { handlerStore } from '../handler/run.ts';
import { claimMany } from '../queue/claim.ts';
import { type ClaimResult, type CompleteResult, complete } from '../queue/complete.ts';
import { nextDue } from '../queue/due.ts';
import type { ExtendedLease } from '../queue/extend.ts';
import { releaseMany } from '../queue/release.ts';
import type { ApplyOutcome, Lease } from '../types.ts';
import { mayClaimAhead, watchConnections } from './connections.ts';
import { FairShare } from './fair-share.ts';
import { type Heartbeat, startHeartbeat } from './heartbeat.ts';
import { byKey, type HandlerRun, Held, heldKey, runHandlers } from './held.ts';
import { silentLog, type WorkerLog } from './log.ts';
import type { MetricsRecorder } from './metrics-recorder.ts';
import { type PruneSchedule, ScheduledPrune } from './prune-schedule.ts';
import { Wakeup } from './wakeup.ts';

/**
 * Messages per claim and per record transaction when the caller does not say, chosen
 * from `bun run bench` (docs/benchmarks.md): far faster than one at a time, while a
 * larger batch added less throughput than it added to the slowest claim-to-ACK time.
 * Every message is still fenced on its own.
 */
export const DEFAULT_BATCH = 100;

/** `/healthz` reports a worker that holds work and settled nothing for this many leases. */
export const STUCK_AFTER_LEASES = 3;

export interface WorkerOptions {
  /** Messages per claim (and per record transaction). Default {@link DEFAULT_BATCH} (100). */
  batch?: number;
  /** Lease length in seconds; heartbeats renew it every third. Default: the store's (30). */
  leaseSeconds?: number;
  /** Handlers running at once (each message still fenced on its own). Default 1. */
  concurrency?: number;
  /**
   * Claim the next batch while this one is handled (at batch 1: while its ACK is written),
   * so the client and the server work at the same time. Only where the backend takes
   * concurrent claimers (PostgreSQL's `SKIP LOCKED`); ignored on SQLite, whose one write
   * lock serializes them anyway. Default true.
   */
  claimAhead?: boolean;
  /** Stop once nothing is claimable now (`onceq work`). Default false: run until stopped. */
  drain?: boolean;
  /** Stop after this many claimed messages. Default: no limit. */
  max?: number;
  /**
   * A handler's deadline, ms: past it its `signal` is aborted and the message gets a
   * temporary failure `handler_timeout` (retried after backoff, dead on the last
   * attempt). Default: none.
   */
  handlerTimeoutMs?: number;
  /** Longest idle poll, ms. Default 1000, or 5000 where the store has LISTEN/NOTIFY. */
  pollMaxMs?: number;
  /** Where the worker's lines go. Default: nowhere. */
  log?: WorkerLog;
  /** Counters and histograms to feed. Default: none. */
  metrics?: MetricsRecorder;
  /** Prune on a schedule, in the background between claims ({@link ScheduledPrune}). Default: never. */
  prune?: PruneSchedule;
  /** Called after every recorded batch with the running counts (progress output). */
  onProgress?: (summary: Readonly<WorkerSummary>) => void;
}

export interface WorkerSummary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Leases found lost (refused heartbeat or refused ACK): nothing of them was written. */
  lost: number;
  /** Claimed but unstarted messages given back at a stop, attempts not spent. */
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
  /** Those leases, each valid until its `leaseUntil` as last extended. */
  abandonedLeases: readonly ExtendedLease[];
  summary: WorkerSummary;
}

/**
 * The one worker loop of onceq (graphile-worker's runner, River's producer): `onceq work`
 * is it in drain mode, `onceq worker` runs it until stopped. One turn:
 *
 * 1. **Claim** up to `batch` messages in one short transaction (lazy recovery first).
 *    With claim-ahead (PostgreSQL) the claim of the next batch goes out now, while this
 *    one is handled and the previous one is still being recorded: the worker holds at
 *    most three batches, the one being recorded, the one being handled and the one
 *    claimed ahead. The previous record is awaited only before this batch's record, so
 *    a slow write never holds back the next claim.
 * 2. **Handle**: up to `concurrency` handlers at once, **outside** any transaction, each
 *    on the payload its claim read under its generation (docs/worker.md says why that
 *    stays exactly-once), each with its optional deadline. One heartbeat for the worker's
 *    life extends every held lease each third of the lease.
 * 3. **Record** every result through {@link Worker.#record}, fenced at the generation it
 *    ran under: the effect and the ACK in one write, or the failure. Unstarted messages
 *    of a stopping worker are released instead.
 * 4. **Share** ({@link FairShare}): on SQLite step aside after lock waits so a second
 *    process gets the write lock; always let signals and timers in.
 *
 * Idle, it sleeps adaptively until new work is due, a NOTIFY arrives (PostgreSQL) or it
 * is stopped; in drain mode it ends instead.
 *
 * Shutdown has two stages. {@link stop}: claim nothing more, let running handlers finish
 * and record them, **release** the claimed-but-unstarted messages (ready now, attempts
 * given back). If `timeoutMs` runs out, or {@link forceStop} is called (a second
 * signal), the running handlers' signals are aborted and the worker ends without them:
 * finished results are still recorded and unstarted messages still released, only the
 * running ones are abandoned (their leases expire and are recovered as silent deaths).
 */
export class Worker {
  readonly #store: Store;
  readonly #batch: number;
  readonly #leaseSeconds: number;
  readonly #concurrency: number;
  readonly #claimAhead: boolean;
  /** Batch 1 with claim-ahead: the next message is claimed by the record's own statement. */
  readonly #claimWithRecord: boolean;
  readonly #drain: boolean;
  readonly #max: number;
  readonly #timeoutMs: number | undefined;
  readonly #log: WorkerLog;
  readonly #metrics: MetricsRecorder | undefined;
  readonly #onProgress: ((summary: Readonly<WorkerSummary>) => void) | undefined;
  readonly #wakeup: Wakeup;
  readonly #fair: FairShare;
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
  /** Messages asked for by claims still in flight (a claim ahead, a record's claim). */
  #claiming = 0;
  #forced = false;
  /** Every message claimed and not yet recorded, released or abandoned, by `id/generation`. */
  readonly #held = new Set<Held>();
  #abandoned: ExtendedLease[] = [];
  /** performance.now() of the last recorded batch, or of taking work while holding none. */
  #progressAt = performance.now();
  #heartbeat: Heartbeat | undefined;
  #loop: Promise<void> | undefined;
  #listener: WakeListener | undefined;
  #storeError: string | undefined;
  /** The idle wait that ended before this claim was ended by a wake (a NOTIFY). */
  #woken = false;
  /** Ends the wait for the current batch's handlers (a forced stop does not wait). */
  #handlersDone: (() => void) | undefined;
  /** How every batch's handlers run: this worker's handler, concurrency and deadline. */
  readonly #handlerRun: HandlerRun;

  constructor(store: Store, handler: Handler, options: WorkerOptions = {}) {
    this.#store = store;
    this.#batch = positive(options.batch ?? DEFAULT_BATCH, 'batch');
    this.#leaseSeconds = positive(options.leaseSeconds ?? store.protocol.leaseSeconds, 'lease');
    this.#concurrency = positive(options.concurrency ?? 1, 'concurrency');
    store.sizePool?.(this.#concurrency);
    this.#claimAhead = (options.claimAhead ?? true) && store.driver.capabilities.skipLocked;
    this.#claimWithRecord = this.#claimAhead && this.#batch === 1;
    this.#drain = options.drain ?? false;
    this.#max = options.max ?? Number.POSITIVE_INFINITY;
    this.#timeoutMs =
      options.handlerTimeoutMs === undefined
        ? undefined
        : positive(options.handlerTimeoutMs, 'handler timeout');
    this.#log = options.log ?? silentLog;
    this.#metrics = options.metrics;
    this.#onProgress = options.onProgress;
    this.#handlerRun = {
      handler,
      store: handlerStore(store),
      concurrency: this.#concurrency,
      timeoutMs: this.#timeoutMs,
      mayStart: () => this.#state === 'running',
    };
    this.#fair = new FairShare(store);
    this.#pruner =
      options.prune === undefined ? undefined : new ScheduledPrune(store, options.prune, this.#log);
    const notifies = store.listen !== undefined;
    this.#wakeup = new Wakeup({ maxMs: options.pollMaxMs ?? (notifies ? 5000 : 1000) });
  }

  /** Running counts since start. */
  get summary(): Readonly<WorkerSummary> {
    return this.#summary;
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
    const quietMs = performance.now() - this.#progressAt;
    if (this.#held.size > 0 && quietMs >= STUCK_AFTER_LEASES * this.#leaseSeconds * 1000) {
      const running = [...this.#held].filter((h) => h.state === 'running');
      const ids = running.slice(0, 5).map((h) => h.lease.eventId);
      return `stuck: settled nothing for ${Math.floor(quietMs / 1000)} s (${STUCK_AFTER_LEASES} leases of ${this.#leaseSeconds} s) while holding ${plural(this.#held.size, 'message')}${ids.length > 0 ? `; handlers still running: ${ids.join(', ')}${running.length > ids.length ? ', …' : ''}` : ''}`;
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
    if (this.#store.listen !== undefined && !this.#drain) {
      try {
        this.#listener = await this.#store.listen(
          () => this.#wakeup.wake(),
          (error) => this.#log.write('listen_lost', error.message, {}),
        );
        const listener = this.#listener;
        this.#metrics?.watchNotifications(() => listener.live());
      } catch (error) {
        this.#log.write('listen_failed', `LISTEN failed (${describe(error)}); polling instead`);
      }
    }
    this.#log.write(
      'start',
      `worker started on ${this.#store.location} (${this.#store.kind}): batch ${this.#batch}, concurrency ${this.#concurrency}, lease ${this.#leaseSeconds} s${this.#timeoutMs === undefined ? '' : `, handler timeout ${this.#timeoutMs / 1000} s`}${this.#claimAhead ? ', claim-ahead' : ''}, wake-up ${this.#listener ? 'LISTEN/NOTIFY + polling' : `polling up to ${this.#wakeup.maxMs} ms`}`,
      {
        store: this.#store.location,
        backend: this.#store.kind,
        batch: this.#batch,
        concurrency: this.#concurrency,
        lease_seconds: this.#leaseSeconds,
        handler_timeout_ms: this.#timeoutMs ?? null,
        claim_ahead: this.#claimAhead,
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
    watchConnections(this.#store, this.#log, this.#metrics);
    this.#heartbeat = startHeartbeat(this.#store, () => this.#renewable(), this.#leaseSeconds, {
      extended: (extended) => this.#extended(extended),
      lost: (errors) => this.#lost(errors, true),
      failed: (error) => this.#log.write('heartbeat_failed', describe(error)),
    });
    this.#progressAt = performance.now();
    this.#loop = this.#run();
    // Awaited by finished() and stop(); a drain that fails rejects there, not as unhandled.
    this.#loop.catch(() => {});
  }

  /** Resolves when the loop ended by itself (drain mode) or after a stop; rejects when a drain failed. */
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
      return this.#result();
    }
    if (this.#state === 'running') this.#state = 'stopping';
    this.#wakeup.interrupt();
    const loop = (this.#loop ?? Promise.resolve()).then(
      () => 'ended' as const,
      () => 'ended' as const,
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.timeoutMs ?? 30_000);
    });
    const ended = await Promise.race([loop, timedOut]);
    clearTimeout(timer);
    if (ended === 'timeout') this.forceStop();
    await loop;
    return this.#result();
  }

  /**
   * Immediate stop (a second signal): aborts running handlers and stops waiting for them;
   * finished results are still recorded and unstarted messages released.
   */
  forceStop(): void {
    if (this.#state === 'running') this.#state = 'stopping';
    this.#forced = true;
    for (const held of this.#held) {
      if (held.state === 'running') held.abort(new Error('worker stopped'));
    }
    this.#wakeup.interrupt();
    this.#handlersDone?.();
  }

  #result(): StopResult {
    return {
      graceful: !this.#forced,
      abandoned: this.#abandoned.length,
      abandonedLeases: this.#abandoned,
      summary: this.#summary,
    };
  }

  async #run(): Promise<void> {
    let recording: Promise<void> = Promise.resolve();
    // The next batch, claimed ahead or by an earlier record (null inside: claim now).
    let ahead: Promise<Held[] | null> | null = null;
    // At batch 1 the record in flight also claims: the batch after `ahead` (null inside:
    // it did not claim, the write was not a lone money effect).
    let recordClaim: Promise<Held[] | null> | null = null;
    try {
      // A batch claimed ahead counts toward `max` when it arrives: it is still handled.
      while (
        this.#state === 'running' &&
        (ahead !== null || recordClaim !== null || this.#summary.claimed < this.#max)
      ) {
        this.#pruner?.tick();
        this.#fair.begin();
        try {
          const pending: Promise<Held[] | null> | null = ahead;
          ahead = null;
          let batch: Held[] =
            (pending === null ? null : await pending) ??
            (this.#mayClaim() ? await this.#claim() : []);
          if (batch.length === 0 && recordClaim !== null) {
            // The record in flight claimed after this claim found nothing: take that.
            const claimed: Held[] | null = await recordClaim;
            recordClaim = null;
            if (claimed !== null) batch = claimed;
          }
          this.#storeError = undefined;
          // Woken and found nothing: another worker was first; react later next time.
          if (this.#woken && batch.length === 0) this.#wakeup.lostRace();
          this.#woken = false;
          if (batch.length === 0) {
            await recording;
            if (this.#drain) break;
            await this.#idle();
            continue;
          }
          const started = performance.now();
          // The record in flight claims the next batch already (batch 1): no claim here.
          if (
            this.#claimAhead &&
            recordClaim === null &&
            this.#mayClaim() &&
            mayClaimAhead(this.#store)
          ) {
            ahead = quiet(this.#claim());
          }
          const handled = runHandlers(batch, this.#handlerRun);
          // A forced stop does not wait for running handlers: their leases are abandoned.
          if (handled !== undefined) {
            await new Promise<void>((resolve) => {
              this.#handlersDone = resolve;
              if (this.#forced) resolve();
              handled.then(resolve);
            });
            this.#handlersDone = undefined;
          }
          if (this.#claimWithRecord) {
            // Batch 1: this record also claims the batch after the next one, so a message
            // costs one statement and one commit. The previous record, still in flight
            // (on another connection), brings the next batch: two records overlap, and
            // the next handler runs while they are written.
            const claimNext = this.#mayClaim();
            const settled: Promise<Held[] | null> = quiet(this.#settle(batch, started, claimNext));
            recording = quiet(Promise.all([recording, settled]).then(() => undefined));
            if (recordClaim !== null) ahead = recordClaim;
            recordClaim = claimNext ? settled : null;
            if (this.#forced) await recording;
          } else if (!this.#claimAhead) {
            // Nothing is written ahead here: the previous record was awaited last turn. The
            // record also claims the next batch where the backend can (SQLite: in the
            // record's transaction, one commit a batch).
            const next = await this.#settle(batch, started, this.#mayClaim());
            if (next !== null) ahead = Promise.resolve(next);
          } else {
            // The previous batch's record is awaited only now, so the claim ahead went out
            // while it was still being written. This batch is recorded even if that failed.
            const previous = await recording.then(
              () => undefined,
              (error: unknown) => ({ error }),
            );
            recording = quiet(this.#settle(batch, started).then(() => undefined));
            if (previous !== undefined) throw previous.error;
            if (this.#forced) await recording;
          }
          const pause = this.#fair.end();
          if (pause !== undefined) await pause;
        } catch (error) {
          await recording.catch(() => {});
          recording = Promise.resolve();
          // What the failed record claimed was never started: give it back.
          const orphans: Held[] | null = await (recordClaim ?? Promise.resolve(null)).catch(
            () => null,
          );
          recordClaim = null;
          if (orphans !== null && orphans.length > 0) {
            await this.#settle(orphans, performance.now()).catch(() => {});
          }
          if (this.#drain) {
            // Nothing of a failed drain runs on after it rejected: the claim ahead ends
            // first (its leases stay leased until they run out, like the failed batch's).
            await ahead?.catch(() => {});
            throw error;
          }
          const why = describe(error);
          if (this.#storeError !== why) this.#log.write('store_error', `${why}; retrying`);
          this.#storeError = why;
          await this.#wakeup.sleep(null);
        }
      }
      await recording;
      // Claimed ahead but never handled (a stop): give back, attempts not spent.
      const left = [...((await ahead) ?? []), ...((await recordClaim) ?? [])];
      if (left.length > 0) await this.#settle(left, performance.now());
    } finally {
      await this.#end();
    }
  }

  /** Running and below `max`, counting the claims in flight: another batch may be claimed. */
  #mayClaim(): boolean {
    return this.#state === 'running' && this.#summary.claimed + this.#claiming < this.#max;
  }

  /** The size of the next claim: `batch`, or what is left of `max` (claims in flight counted). */
  #nextLimit(): number {
    return Math.min(this.#batch, this.#max - this.#summary.claimed - this.#claiming);
  }

  /**
   * Claims the next batch and holds it at once: a batch claimed ahead is renewed by the
   * heartbeat from its claim on, like the one being handled.
   */
  async #claim(): Promise<Held[]> {
    const limit = this.#nextLimit();
    this.#claiming += limit;
    try {
      const leases = await claimMany(this.#store, { limit, leaseSeconds: this.#leaseSeconds });
      return this.#hold(leases);
    } finally {
      this.#claiming -= limit;
    }
  }

  /** Takes claimed leases into the worker's hands. */
  #hold(leases: readonly Lease[]): Held[] {
    if (leases.length === 0) return [];
    if (this.#held.size === 0) this.#progressAt = performance.now();
    this.#summary.claimed += leases.length;
    const batch: Held[] = [];
    for (const lease of leases) {
      const held = new Held(lease);
      this.#held.add(held);
      batch.push(held);
    }
    const metrics = this.#metrics;
    if (metrics !== undefined) {
      const claimedAt = this.#store.clock();
      for (const lease of leases) {
        metrics.queueWait.observe(Math.max(0, claimedAt - lease.availableAt));
      }
    }
    this.#wakeup.busy();
    return batch;
  }

  /**
   * Nothing was claimable: sleep, and before claiming again (a write transaction) peek
   * with one read statement whether anything is due, so an idle worker costs a read per
   * poll. Returns when something is due, a NOTIFY woke it (a worker that lost its last
   * race looks first: {@link Wakeup}), stop() interrupted it, or it stopped.
   */
  async #idle(): Promise<void> {
    while (this.#state === 'running') {
      this.#pruner?.tick();
      const due = await nextDue(this.#store);
      const next = [due.readyAt, due.leaseExpiresAt].filter((t): t is number => t !== null);
      const earliest = next.length > 0 ? Math.min(...next) : null;
      if (earliest !== null && earliest <= due.now) return;
      // Integer seconds: due at second S means claimable once the clock reads S. The
      // times are on the store's clock (PostgreSQL: the server's), moved to the host's.
      const dueAtMs = earliest === null ? null : (earliest - due.now + this.#store.clock()) * 1000;
      this.#woken = await this.#wakeup.sleep(dueAtMs);
      if (this.#woken && !this.#wakeup.backedOff) return;
    }
  }

  /**
   * Closes a batch: abandons the handlers still running after a forced stop, releases
   * the unstarted messages, records every result, and logs the batch.
   */
  async #settle(
    batch: readonly Held[],
    started: number,
    claimNext = false,
  ): Promise<Held[] | null> {
    // A heartbeat running now must not extend a lease this write is about to close.
    const beat = this.#heartbeat?.running();
    if (beat !== undefined) await beat;
    const unstarted: Held[] = [];
    const ran: Held[] = [];
    for (const held of batch) {
      if (held.state === 'running') {
        // Forced stop: the handler is abandoned, its lease left to expire.
        this.#abandoned.push({
          eventId: held.lease.eventId,
          generation: held.lease.generation,
          leaseUntil: held.leaseUntil,
        });
        this.#held.delete(held);
        continue;
      }
      if (held.state === 'waiting') unstarted.push(held);
      else if (held.result !== undefined) ran.push(held);
      if (held.state !== 'lost') held.state = 'recording';
    }
    try {
      if (unstarted.length > 0) await this.#release(unstarted);
      // Lost items are recorded too: the fence refuses their late ACK (counted once).
      const { outcomes, lost, next } = claimNext
        ? await this.#recordAndClaim(ran)
        : await this.#record(ran);
      if (lost.length > 0) this.#lost(lost, false);
      const settledAt = performance.now();
      for (const outcome of outcomes) this.#count(outcome);
      const metrics = this.#metrics;
      if (metrics !== undefined) {
        for (const held of ran) metrics.handlerToAck.observe((settledAt - held.startedAt) / 1000);
      }
      const s = this.#summary;
      if (ran.length > 0 && this.#log !== silentLog) {
        const lostHere = batch.filter((h) => h.lostCounted).length;
        const ms = Math.round(settledAt - started);
        this.#log.write(
          'batch',
          `claimed ${batch.length}: ${count(outcomes, 'done')} done, ${count(outcomes, 'retry')} retried, ${count(outcomes, 'dead')} dead, ${lostHere} lost, ${unstarted.length} released (${ms} ms; totals: ${s.done} done, ${s.retried} retried, ${s.dead} dead, ${s.lost} lost)`,
          {
            claimed: batch.length,
            done: count(outcomes, 'done'),
            retried: count(outcomes, 'retry'),
            dead: count(outcomes, 'dead'),
            lost: lostHere,
            released: unstarted.length,
            ms,
          },
        );
      }
      this.#progressAt = settledAt;
      this.#onProgress?.(s);
      return next ?? null;
    } finally {
      for (const held of batch) this.#held.delete(held);
    }
  }

  /**
   * The one place the loop writes handler results, each fenced at the generation it ran
   * under, through the one result writer ({@link complete}): on PostgreSQL the successes
   * of a batch are one fenced effect + ACK statement, no read in front.
   */
  #record(ran: readonly Held[]): Promise<CompleteResult & { next?: Held[] }> {
    if (ran.length === 0) return Promise.resolve({ outcomes: [], lost: [] });
    return complete(this.#store, this.#results(ran));
  }

  /**
   * {@link #record}, the write also claiming the next batch where the backend can
   * (SQLite in the record's transaction; PostgreSQL at batch 1, in its one statement for
   * a money effect): one commit a batch;
   * `next` holds what it claimed, undefined when it did not claim.
   */
  async #recordAndClaim(ran: readonly Held[]): Promise<CompleteResult & { next?: Held[] }> {
    if (ran.length === 0) return { outcomes: [], lost: [] };
    const limit = this.#nextLimit();
    this.#claiming += limit;
    try {
      const claimNext = {
        limit,
        leaseSeconds: this.#leaseSeconds,
        maxAttempts: this.#store.protocol.maxAttempts,
      };
      const done = await complete(this.#store, this.#results(ran), { claimNext });
      // Held at once, before the claim stops counting as in flight.
      return done.claimed === undefined ? done : { ...done, next: this.#hold(done.claimed) };
    } finally {
      this.#claiming -= limit;
    }
  }

  /** The held messages themselves, no copy: {@link #settle} puts one in `ran` only with its result. */
  #results(ran: readonly Held[]): readonly ClaimResult[] {
    return ran as readonly (Held & ClaimResult)[];
  }

  async #release(unstarted: readonly Held[]): Promise<void> {
    const { released, lost } = await releaseMany(
      this.#store,
      unstarted.map((h) => h.lease),
    );
    this.#summary.released += released.length;
    this.#metrics?.released.inc(released.length);
    if (released.length > 0) {
      this.#log.write(
        'release',
        `released ${plural(released.length, 'claimed but unstarted message')} (attempts not spent): ${released.join(', ')}`,
        { released: released.length },
      );
    }
    this.#lost(lost, false);
  }

  /** The leases a heartbeat renews: claimed and not yet being recorded, released or lost. */
  #renewable(): Lease[] {
    const leases: Lease[] = [];
    for (const held of this.#held) {
      if (held.state === 'waiting' || held.state === 'running' || held.state === 'finished') {
        leases.push(held.lease);
      }
    }
    return leases;
  }

  #extended(extended: readonly ExtendedLease[]): void {
    const keyed = extended.length > 0 ? byKey(this.#held) : undefined;
    for (const lease of extended) {
      const held = keyed?.get(heldKey(lease));
      if (held !== undefined) held.leaseUntil = lease.leaseUntil;
    }
    this.#summary.extended += extended.length;
    this.#metrics?.extended.inc(extended.length);
  }

  /** Counts and logs each lost lease once; a refused heartbeat also stops its handler. */
  #lost(errors: readonly LeaseLostError[], byHeartbeat: boolean): void {
    const keyed = errors.length > 0 ? byKey(this.#held) : undefined;
    for (const error of errors) {
      const held = keyed?.get(heldKey(error));
      if (held === undefined || held.lostCounted) continue;
      held.lostCounted = true;
      if (byHeartbeat) {
        if (held.state !== 'recording') held.state = 'lost';
        held.abort(error);
      }
      this.#summary.lost++;
      this.#metrics?.leaseLost.inc();
      this.#metrics?.processed.inc({ outcome: 'lost' });
      this.#log.write('lease_lost', error.message, {
        event_id: error.eventId,
        generation: error.generation,
      });
    }
  }

  #count(outcome: ApplyOutcome): void {
    if (outcome.outcome === 'done') this.#summary.done++;
    else if (outcome.outcome === 'retry') this.#summary.retried++;
    else {
      this.#summary.dead++;
      this.#log.write(
        'dead',
        `${outcome.eventId} went to the DLQ: ${outcome.code}: ${outcome.detail}`,
        { event_id: outcome.eventId, code: outcome.code },
      );
    }
    this.#metrics?.processed.inc({ outcome: outcome.outcome });
  }

  async #end(): Promise<void> {
    this.#state = 'stopped';
    await this.#heartbeat?.stop();
    await this.#pruner?.stop();
    await this.#listener?.close();
    this.#listener = undefined;
    const { graceful, abandoned, abandonedLeases } = this.#result();
    const s = this.#summary;
    this.#log.write(
      'stopped',
      `worker stopped ${graceful ? 'gracefully' : `at once, ${plural(abandoned, 'message')} abandoned to lease expiry${abandonedLeases.length > 0 ? ` (${abandonedLeases.map((l) => `${l.eventId} until ${l.leaseUntil}`).join(', ')})` : ''}`}: claimed ${s.claimed}, ${s.done} done, ${s.retried} retried, ${s.dead} dead, ${s.lost} lost, ${s.released} released, ${s.extended} extended`,
      { graceful, abandoned, ...s },
    );
  }
}

/**
 * Marks a promise as handled now, so its rejection (awaited later, after other work) is
 * not reported as unhandled in between; awaiting the returned promise still throws.
 */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

function count(outcomes: readonly ApplyOutcome[], kind: ApplyOutcome['outcome']): number {
  let n = 0;
  for (const o of outcomes) if (o.outcome === kind) n++;
  return n;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
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
