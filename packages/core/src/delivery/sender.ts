/**
 * The sender: the loop `onceq deliver` runs (and a program can run with
 * {@link sendDeliveries}). Per endpoint it keeps up to twice the endpoint's concurrency
 * leased: up to the concurrency in flight ({@link attemptDelivery}), the rest ready to
 * start the moment a slot frees. Durability costs one commit per batch, not per attempt:
 * one transaction records the outcomes of every attempt that ended since the last one
 * (one statement, each fenced by its lease) and leases the next batch, taken when an
 * endpoint's leases fall to its concurrency (or nothing is in flight). Deliveries of an
 * endpoint a 410 disabled, or of a name no endpoint is configured for, are not leased:
 * they wait, listed by `onceq deliveries`.
 *
 * At least once: a sender killed after the receiver answered and before the outcome
 * committed leaves the lease to expire, and the delivery is sent again under the same
 * `webhook-id`. Several senders (processes or hosts, on PostgreSQL) share the outbox;
 * a lease keeps two of them from sending one delivery at the same time while it lasts.
 */
import type { Store } from '../driver/backend.ts';
import {
  type AttemptRecord,
  type ClaimedDelivery,
  claimDeliveries,
  disabledEndpoints,
  recordAttempts,
  releaseDeliveries,
} from '../driver/sql/deliveries.ts';
import { attemptDelivery } from './attempt.ts';
import {
  type DeliveryEndpoint,
  EndpointConfigError,
  type ResolvedEndpoint,
  resolveEndpoint,
  webhookId,
} from './endpoint.ts';

/** One attempt as the sender logs it (no body, no header, no secret). */
/** How one delivery attempt ended, as the attempt log and the metrics name it. */
export type AttemptOutcome = 'delivered' | 'retry' | 'dead' | 'gone';

export interface AttemptLog {
  readonly webhookId: string;
  readonly endpoint: string;
  readonly attempt: number;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly outcome: AttemptOutcome;
  readonly error: string | null;
}

export interface SenderOptions {
  /** The configured endpoints; deliveries to other names wait. */
  readonly endpoints: readonly DeliveryEndpoint[];
  /** Stops the loop: no new lease is taken, attempts in flight finish and are recorded. */
  readonly signal?: AbortSignal;
  /** Return once nothing is due now and nothing is in flight. Default false (run until `signal`). */
  readonly untilIdle?: boolean;
  /**
   * How long a lease lasts, in seconds. Default: twice the endpoint's timeout plus 10 s,
   * the longest a leased delivery waits for a free slot and then is attempted. A lease
   * with less than the endpoint's timeout left when its slot frees is given back
   * unattempted: a lease that expired during an attempt would let another sender send
   * the same delivery meanwhile.
   */
  readonly leaseSeconds?: number;
  /** How often to look for newly due deliveries while the outbox has none, in ms. Default 1000. */
  readonly pollMs?: number;
  /** Called once per recorded attempt. */
  readonly onAttempt?: (log: AttemptLog) => void;
  /** Called when recording outcomes failed (the store is unreachable); the leases expire and the deliveries are sent again. */
  readonly onError?: (error: unknown) => void;
}

/** What one run of the sender did. */
export interface SenderSummary {
  delivered: number;
  retried: number;
  dead: number;
  disabled: number;
  /** Outcomes dropped because another sender had taken the delivery over. */
  lost: number;
}

/**
 * Runs the sender on `store` until `options.signal` aborts (or, with `untilIdle`, until
 * nothing is due). Resolves with what it did. Throws {@link EndpointConfigError} for an
 * endpoint it cannot use, before sending anything.
 */
export async function sendDeliveries(store: Store, options: SenderOptions): Promise<SenderSummary> {
  const lanes = options.endpoints.map((e) => newLane(resolveEndpoint(e), options.leaseSeconds));
  const summary: SenderSummary = { delivered: 0, retried: 0, dead: 0, disabled: 0, lost: 0 };
  const pollMs = options.pollMs ?? 1000;
  /** Attempts that ended and are not recorded yet. */
  const finished: AttemptRecord[] = [];
  /** Leases to give back unattempted at the next commit. */
  const released: ClaimedDelivery[] = [];
  let running = 0;
  /** The last commit failed: wait for the poll interval before the next. */
  let resting = false;
  let wake: (() => void) | null = null;
  const wakeUp = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  options.signal?.addEventListener('abort', wakeUp, { once: true });

  /** Starts queued deliveries of `lane` while it has free slots. */
  const pump = (lane: Lane) => {
    while (
      lane.inFlight < lane.endpoint.concurrency &&
      !lane.disabled &&
      !options.signal?.aborted
    ) {
      const next = lane.queued.shift();
      if (next === undefined) return;
      if (next.leaseEnds - performance.now() < lane.endpoint.timeoutMs) {
        released.push(next.delivery);
        continue;
      }
      running += 1;
      lane.inFlight += 1;
      void attemptDelivery(lane.endpoint, next.delivery, store.clock).then((record) => {
        running -= 1;
        lane.inFlight -= 1;
        finished.push(record);
        if (record.outcome.kind === 'gone') {
          // Nothing more goes to an endpoint that said 410: its waiting leases go back.
          lane.disabled = true;
          released.push(...lane.queued.splice(0).map((q) => q.delivery));
        }
        pump(lane);
        wakeUp();
      });
    }
  };

  /** What the attempts in `records` came to, counted and logged once their transaction committed. */
  const report = (records: readonly AttemptRecord[], recorded: number) => {
    summary.lost += records.length - recorded;
    for (const r of records) {
      const kind = r.outcome.kind;
      if (kind === 'delivered') summary.delivered += 1;
      else if (kind === 'retry') summary.retried += 1;
      else if (kind === 'dead') summary.dead += 1;
      else summary.disabled += 1;
      options.onAttempt?.({
        webhookId: webhookId(r.delivery.eventId, r.delivery.key),
        endpoint: r.delivery.endpoint,
        attempt: r.delivery.attempt,
        status: r.status,
        latencyMs: r.latencyMs,
        outcome: kind,
        error: r.error,
      });
    }
  };

  /**
   * One transaction (one fsync on SQLite FULL): the outcomes of every attempt that ended
   * since the last one and the leases to give back, then, when claiming, new leases for
   * every endpoint that {@link wantsLeases}. Returns how many it leased.
   */
  const step = async (claiming: boolean): Promise<number> => {
    const records = finished.splice(0);
    const giveBack = released.splice(0);
    let recorded = 0;
    let leased: [Lane, ClaimedDelivery[], number][] = [];
    try {
      await store.transact(async (x) => {
        const now = store.clock();
        recorded = await recordAttempts(x, records, now);
        await releaseDeliveries(x, giveBack);
        leased = [];
        if (!claiming) return;
        // Read after the outcomes: a 410 recorded just now disables its endpoint here.
        const off = new Set((await disabledEndpoints(x)).map((r) => r.endpoint));
        for (const lane of lanes) {
          lane.disabled = off.has(lane.endpoint.name);
          if (lane.disabled) {
            // Its waiting leases go back at the next commit: nothing more is sent to it.
            released.push(...lane.queued.splice(0).map((q) => q.delivery));
            continue;
          }
          if (!wantsLeases(lane)) continue;
          const room = 2 * lane.endpoint.concurrency - leasedBy(lane);
          const startedAt = performance.now();
          const claimed = await claimDeliveries(
            x,
            lane.endpoint.name,
            room,
            now,
            lane.leaseSeconds,
            lane.endpoint.schedule.length,
          );
          leased.push([lane, claimed, startedAt + lane.leaseSeconds * 1000]);
          // Fewer than asked: nothing more is due now; look again after the poll interval.
          lane.drained = claimed.length < room;
        }
      });
    } catch (error) {
      // Nothing of it committed: the outcomes are lost (their leases expire and the
      // deliveries are sent again under the same ids) and nothing was leased or released.
      // The next try waits for the poll interval: a failing store is not hammered.
      options.onError?.(error);
      resting = true;
      return 0;
    }
    report(records, recorded);
    let count = 0;
    for (const [lane, claimed, leaseEnds] of leased) {
      for (const delivery of claimed) lane.queued.push({ delivery, leaseEnds });
      count += claimed.length;
      pump(lane);
    }
    return count;
  };

  /** Whether to commit now rather than wait for more attempts to end. */
  const due = () => {
    if (options.signal?.aborted === true) return true;
    if (resting) return false;
    return (
      released.length > 0 ||
      (finished.length > 0 && running === 0) ||
      lanes.some((l) => !l.disabled && !l.drained && wantsLeases(l)) ||
      lanes.some((l) => finished.length * 4 >= l.endpoint.concurrency && l.drained)
    );
  };

  while (!options.signal?.aborted) {
    const claimed = await step(true);
    const idle =
      running === 0 && finished.length === 0 && lanes.every((l) => l.queued.length === 0);
    if (claimed === 0 && idle && options.untilIdle) break;
    if (due()) continue;
    // Sleep until enough attempts ended, the poll interval passes, or the caller stops us.
    await new Promise<void>((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        wake = null;
        resolve();
      };
      const timer = setTimeout(() => {
        for (const lane of lanes) lane.drained = false;
        resting = false;
        finish();
      }, pollMs);
      const check = () => {
        if (due()) finish();
        else wake = check;
      };
      wake = check;
    });
  }
  // Stopping: queued leases go back; attempts in flight end by their own timeouts and
  // each is recorded.
  for (const lane of lanes) released.push(...lane.queued.splice(0).map((q) => q.delivery));
  while (running > 0 || finished.length > 0 || released.length > 0) {
    if (finished.length === 0 && released.length === 0) {
      await new Promise<void>((resolve) => (wake = resolve));
    }
    await step(false);
  }
  return summary;
}

/** One endpoint's share of the sender. */
interface Lane {
  readonly endpoint: ResolvedEndpoint;
  readonly leaseSeconds: number;
  /** Leased, not started yet: started in order as slots free, each with when its lease ends (performance.now() ms). */
  readonly queued: { delivery: ClaimedDelivery; leaseEnds: number }[];
  inFlight: number;
  /** Disabled by a 410: nothing is leased for it. */
  disabled: boolean;
  /** The last claim found fewer due deliveries than it asked for. */
  drained: boolean;
}

function newLane(endpoint: ResolvedEndpoint, leaseSeconds: number | undefined): Lane {
  if (leaseSeconds !== undefined && leaseSeconds * 1000 <= endpoint.timeoutMs) {
    throw new EndpointConfigError(
      `endpoint ${endpoint.name}: a lease of ${leaseSeconds} s does not outlast its timeout of ${endpoint.timeoutMs} ms`,
    );
  }
  return {
    endpoint,
    leaseSeconds: leaseSeconds ?? 2 * Math.ceil(endpoint.timeoutMs / 1000) + 10,
    queued: [],
    inFlight: 0,
    disabled: false,
    drained: false,
  };
}

/** Leases held: in flight and waiting for a slot. */
function leasedBy(lane: Lane): number {
  return lane.inFlight + lane.queued.length;
}

/** A lane leases its next batch once its leases fall to its concurrency: a batch's worth of slots ahead. */
function wantsLeases(lane: Lane): boolean {
  return leasedBy(lane) <= lane.endpoint.concurrency;
}
