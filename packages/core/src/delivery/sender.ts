/**
 * The sender: the loop `onceq deliver` runs (and a program can run with
 * {@link sendDeliveries}). Per endpoint it leases due deliveries up to the endpoint's
 * concurrency, sends each ({@link attemptDelivery}), and records the outcomes of
 * attempts that ended together in one transaction, each fenced by its lease. Deliveries
 * of an endpoint a 410 disabled, or of a name no endpoint is configured for, are not
 * leased: they wait, listed by `onceq deliveries`.
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
} from '../driver/sql/deliveries.ts';
import { attemptDelivery } from './attempt.ts';
import {
  type DeliveryEndpoint,
  type ResolvedEndpoint,
  resolveEndpoint,
  webhookId,
} from './endpoint.ts';

/** One attempt as the sender logs it (no body, no header, no secret). */
export interface AttemptLog {
  readonly webhookId: string;
  readonly endpoint: string;
  readonly attempt: number;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly outcome: AttemptRecord['outcome']['kind'];
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
   * How long a lease lasts, in seconds. Default: the endpoint's timeout plus 10 s. Must
   * outlast an attempt: a lease that expires first lets another sender send the same
   * delivery meanwhile.
   */
  readonly leaseSeconds?: number;
  /** How often to look for due deliveries when there is nothing to do, in ms. Default 1000. */
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
  const endpoints = options.endpoints.map(resolveEndpoint);
  const summary: SenderSummary = { delivered: 0, retried: 0, dead: 0, disabled: 0, lost: 0 };
  const inFlight = new Map<string, number>(endpoints.map((e) => [e.name, 0]));
  const finished: AttemptRecord[] = [];
  let wake: (() => void) | null = null;
  let running = 0;
  const wakeUp = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  options.signal?.addEventListener('abort', wakeUp, { once: true });

  const start = (endpoint: ResolvedEndpoint, delivery: ClaimedDelivery) => {
    running += 1;
    inFlight.set(endpoint.name, (inFlight.get(endpoint.name) ?? 0) + 1);
    void attemptDelivery(endpoint, delivery, store.clock).then((record) => {
      running -= 1;
      inFlight.set(endpoint.name, (inFlight.get(endpoint.name) ?? 1) - 1);
      finished.push(record);
      wakeUp();
    });
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
   * since the last one, then, unless stopping, new leases for the free slots of each
   * endpoint with at least a quarter of its slots free (or none in flight). Returns how
   * many it leased.
   */
  const step = async (claiming: boolean): Promise<number> => {
    const records = finished.splice(0);
    let recorded = 0;
    let leased: [ResolvedEndpoint, ClaimedDelivery[]][] = [];
    try {
      await store.transact(async (x) => {
        const now = store.clock();
        recorded = records.length > 0 ? await recordAttempts(x, records, now) : 0;
        leased = [];
        if (!claiming) return;
        // Read after the outcomes: a 410 recorded just now disables its endpoint here.
        const off = new Set((await disabledEndpoints(x)).map((r) => r.endpoint));
        for (const endpoint of endpoints) {
          if (off.has(endpoint.name)) continue;
          const busy = inFlight.get(endpoint.name) ?? 0;
          const free = endpoint.concurrency - busy;
          if (free <= 0 || (busy > 0 && free * 4 < endpoint.concurrency)) continue;
          const lease = options.leaseSeconds ?? Math.ceil(endpoint.timeoutMs / 1000) + 10;
          const claimed = await claimDeliveries(
            x,
            endpoint.name,
            free,
            now,
            lease,
            endpoint.schedule.length,
          );
          leased.push([endpoint, claimed]);
        }
      });
    } catch (error) {
      // Nothing of it committed: the outcomes are lost (their leases expire and the
      // deliveries are sent again under the same ids) and nothing was leased.
      options.onError?.(error);
      return 0;
    }
    report(records, recorded);
    let count = 0;
    for (const [endpoint, claimed] of leased) {
      for (const delivery of claimed) start(endpoint, delivery);
      count += claimed.length;
    }
    return count;
  };

  while (!options.signal?.aborted) {
    const claimed = await step(true);
    if (claimed === 0 && running === 0 && finished.length === 0 && options.untilIdle) break;
    if (finished.length > 0) continue;
    // Sleep until an attempt ends, the poll interval passes, or the caller stops us.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => wakeUp(), running > 0 ? 1000 : (options.pollMs ?? 1000));
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  // Stopping: attempts in flight end by their own timeouts; each is recorded.
  while (running > 0 || finished.length > 0) {
    if (finished.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    await step(false);
  }
  return summary;
}
