import type { Store } from '../driver/backend.ts';
import type { LeaseLostError } from '../errors.ts';
import type { ExtendedLease } from '../queue/extend.ts';
import { DEFAULT_QUEUE } from '../queues.ts';
import type { ApplyOutcome, Lease } from '../types.ts';
import type { Held } from './held.ts';
import { silentLog, type WorkerLog } from './log.ts';
import { type MetricsRecorder, OUTCOMES } from './metrics-recorder.ts';
import type { StopResult, WorkerSettings, WorkerSummary } from './options.ts';
import type { ScheduledPrune } from './prune-schedule.ts';

/** One recorded batch as its log line tells it. */
export interface BatchRecord {
  /** Every message of the batch: recorded, released, abandoned or lost. */
  claimed: number;
  outcomes: readonly ApplyOutcome[];
  /** The batch's leases found lost, by a heartbeat or by its record. */
  lost: number;
  released: number;
  /** performance.now() when the batch was taken in hand, and when it was recorded. */
  startedAt: number;
  settledAt: number;
}

/**
 * What the worker tells about its work: the running counts ({@link WorkerSummary}), the
 * Prometheus metrics and every log line. The loop and the completers only say what
 * happened; each line is worded here, once.
 */
export class Tally {
  readonly summary: WorkerSummary = {
    claimed: 0,
    done: 0,
    retried: 0,
    dead: 0,
    lost: 0,
    released: 0,
    extended: 0,
  };
  /** Handlers abandoned by a forced stop: their leases, valid until `leaseUntil`. */
  readonly abandoned: ExtendedLease[] = [];
  /** performance.now() of the last recorded batch, or of taking work while holding none. */
  progressAt = performance.now();
  readonly #log: WorkerLog;
  readonly #metrics: MetricsRecorder | undefined;
  readonly #onProgress: ((summary: Readonly<WorkerSummary>) => void) | undefined;

  constructor(
    log: WorkerLog,
    metrics: MetricsRecorder | undefined,
    onProgress: ((summary: Readonly<WorkerSummary>) => void) | undefined,
  ) {
    this.#log = log;
    this.#metrics = metrics;
    this.#onProgress = onProgress;
  }

  /** Leases taken in hand from `queue`; `claimedAt` on the store's clock (their queue wait ends there). */
  claimed(leases: readonly Lease[], queue: string, claimedAt: () => number): void {
    this.summary.claimed += leases.length;
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    const now = claimedAt();
    for (const lease of leases) {
      metrics.queueWait.observe({ queue }, Math.max(0, now - lease.availableAt));
    }
  }

  /** A batch's results as written: counted, the dead ones logged, handler-to-ACK observed. */
  recorded(outcomes: readonly ApplyOutcome[], ran: readonly Held[], settledAt: number): void {
    const s = this.summary;
    // A batch is of one queue, but one gathered at a stop may hold several.
    const queueOf = queues(ran);
    for (const outcome of outcomes) {
      const queue = queueOf(outcome.eventId);
      if (outcome.outcome === 'done') s.done++;
      else if (outcome.outcome === 'retry') s.retried++;
      else {
        s.dead++;
        const where = queue === DEFAULT_QUEUE ? '' : ` of queue ${queue}`;
        this.#log.write(
          'dead',
          `${outcome.eventId}${where} went to the DLQ: ${outcome.code}: ${outcome.detail}`,
          { event_id: outcome.eventId, queue, code: outcome.code },
        );
      }
      this.#metrics?.processed.inc({ queue, outcome: outcome.outcome });
    }
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    for (const held of ran) metrics.handlerToAck.observe((settledAt - held.startedAt) / 1000);
  }

  /** A batch closed: its line (when it ran anything), progress made, the progress callback. */
  settled(batch: BatchRecord, ran: number): void {
    const s = this.summary;
    if (ran > 0 && this.#log !== silentLog) {
      const { claimed, outcomes, lost, released } = batch;
      const done = count(outcomes, 'done');
      const retried = count(outcomes, 'retry');
      const dead = count(outcomes, 'dead');
      const ms = Math.round(batch.settledAt - batch.startedAt);
      const totals = `${s.done} done, ${s.retried} retried, ${s.dead} dead, ${s.lost} lost`;
      this.#log.write(
        'batch',
        `claimed ${claimed}: ${done} done, ${retried} retried, ${dead} dead, ${lost} lost, ${released} released (${ms} ms; totals: ${totals})`,
        { claimed, done, retried, dead, lost, released, ms },
      );
    }
    this.progressAt = batch.settledAt;
    this.#onProgress?.(s);
  }

  /** One lost lease of `queue` (each is reported once, whichever write found it). */
  lost(error: LeaseLostError, queue: string): void {
    this.summary.lost++;
    this.#metrics?.leaseLost.inc();
    this.#metrics?.processed.inc({ queue, outcome: 'lost' });
    this.#log.write('lease_lost', error.message, {
      event_id: error.eventId,
      queue,
      generation: error.generation,
    });
  }

  /** Claimed but unstarted messages given back, attempts not spent. */
  released(ids: readonly string[]): void {
    this.summary.released += ids.length;
    this.#metrics?.released.inc({ reason: 'stop' }, ids.length);
    if (ids.length === 0) return;
    this.#log.write(
      'release',
      `released ${plural(ids.length, 'claimed but unstarted message')} (attempts not spent): ${ids.join(', ')}`,
      { released: ids.length },
    );
  }

  /** Messages whose results could not reach the store, given back once one served. */
  gaveBack(ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.summary.released += ids.length;
    this.#metrics?.released.inc({ reason: 'store_unreachable' }, ids.length);
    this.#log.write(
      'release',
      `gave back ${plural(ids.length, 'message')} whose results could not reach the store (attempts not spent; handled again): ${ids.join(', ')}`,
      { released: ids.length, reason: 'store_unreachable' },
    );
  }

  extended(n: number): void {
    this.summary.extended += n;
    this.#metrics?.extended.inc(n);
  }

  /** A line of its own: `event` is its stable name (`store_error`, `listen_lost`, …). */
  note(event: string, message: string): void {
    this.#log.write(event, message, {});
  }

  /**
   * The start line: the worker's queues and settings, and each queue's policy (one
   * policy said once when every queue has the same).
   */
  started(store: Store, settings: WorkerSettings, claimAhead: boolean, wake: string): void {
    const { batch, concurrency, timeoutMs, queues } = settings;
    const deadline = timeoutMs === undefined ? '' : `, handler timeout ${timeoutMs / 1000} s`;
    const policies = queues.map((q) => ({ queue: q.name, ...policyOf(q.store) }));
    const [first] = policies as [(typeof policies)[number]];
    const same = policies.every((p) => policyText(p) === policyText(first));
    const names = queues.map((q) => q.name);
    // Every queue's outcomes are series from the start, at 0: a rate over them works at once.
    for (const queue of names) {
      for (const outcome of OUTCOMES) this.#metrics?.processed.inc({ queue, outcome }, 0);
    }
    const which = same
      ? `queue${names.length === 1 ? '' : 's'} ${names.join(', ')}, ${policyText(first)}`
      : `queues ${policies.map((p) => `${p.queue} (${policyText(p)})`).join(', ')}`;
    this.#log.write(
      'start',
      `worker started on ${store.location} (${store.kind}): ${which}, batch ${batch}, concurrency ${concurrency}${deadline}${claimAhead ? ', claim-ahead' : ''}, wake-up ${wake}`,
      {
        store: store.location,
        backend: store.kind,
        queues: names.join(','),
        batch,
        concurrency,
        ...(same
          ? { lease_seconds: first.lease_seconds, attempts: first.attempts, on_dead: first.on_dead }
          : { policies: policies.map((p) => `${p.queue}: ${policyText(p)}`).join('; ') }),
        handler_timeout_ms: timeoutMs ?? null,
        claim_ahead: claimAhead,
      },
    );
  }

  /** The worker's prune schedule, once at start (none without one). */
  pruneSchedule(pruner: ScheduledPrune | undefined): void {
    if (pruner === undefined) return;
    const { everySeconds } = pruner;
    const { doneOlderThanSeconds: done, deadOlderThanSeconds: dead } = pruner.ages();
    const ages = [
      done === undefined ? null : `done older than ${done} s`,
      dead === undefined ? null : `dead older than ${dead} s`,
    ].filter((x) => x !== null);
    this.#log.write('prune_schedule', `pruning every ${everySeconds} s: ${ages.join(', ')}`, {
      every_seconds: everySeconds,
      done_older_than: done ?? null,
      dead_older_than: dead ?? null,
    });
  }

  stopped({ graceful, abandoned, abandonedLeases }: StopResult): void {
    const s = this.summary;
    const leases = abandonedLeases.map((l) => `${l.eventId} until ${l.leaseUntil}`).join(', ');
    const how = graceful
      ? 'gracefully'
      : `at once, ${plural(abandoned, 'message')} abandoned to lease expiry${leases === '' ? '' : ` (${leases})`}`;
    this.#log.write(
      'stopped',
      `worker stopped ${how}: claimed ${s.claimed}, ${s.done} done, ${s.retried} retried, ${s.dead} dead, ${s.lost} lost, ${s.released} released, ${s.extended} extended`,
      { graceful, abandoned, ...s },
    );
  }
}

/** `/healthz`'s sentence for a worker holding `held` messages and settling nothing for `quietMs`. */
export function stuck(
  quietMs: number,
  leaseSeconds: number,
  leases: number,
  held: readonly Held[],
): string {
  const running = held.filter((h) => h.state === 'running');
  const ids = running.slice(0, 5).map((h) => h.lease.eventId);
  const more = running.length > ids.length ? ', …' : '';
  const handlers = ids.length > 0 ? `; handlers still running: ${ids.join(', ')}${more}` : '';
  return `stuck: settled nothing for ${Math.floor(quietMs / 1000)} s (${leases} leases of ${leaseSeconds} s) while holding ${plural(held.length, 'message')}${handlers}`;
}

/** A queue's policy as the start line's fields say it. */
function policyOf(store: Store) {
  const { leaseSeconds, maxAttempts, onDead } = store.protocol;
  return { lease_seconds: leaseSeconds, attempts: maxAttempts, on_dead: onDead };
}

function policyText(p: ReturnType<typeof policyOf>): string {
  return `lease ${p.lease_seconds} s, attempts ${p.attempts}, on dead ${p.on_dead}`;
}

/** The queue of each event id of `ran` (a lookup made only when the batch mixes queues). */
function queues(ran: readonly Held[]): (eventId: string) => string {
  const [first] = ran;
  const only = first?.queue ?? DEFAULT_QUEUE;
  if (ran.every((h) => h.queue === only)) return () => only;
  const byId = new Map(ran.map((h) => [h.lease.eventId, h.queue]));
  return (eventId) => byId.get(eventId) ?? DEFAULT_QUEUE;
}

function count(outcomes: readonly ApplyOutcome[], kind: ApplyOutcome['outcome']): number {
  let n = 0;
  for (const o of outcomes) if (o.outcome === kind) n++;
  return n;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
