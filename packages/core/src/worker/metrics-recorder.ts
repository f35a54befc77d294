import type { ConnectionUse } from '../driver/backend.ts';
/** How a processed message ended, as the `outcome` label of `onceq_processed_total`. */
export const OUTCOMES = ['done', 'retry', 'dead', 'lost'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * Why a worker gave messages back, as the `reason` label of `onceq_released_total`:
 * `stop`, claimed but unstarted at a stop; `store_unreachable`, a result the worker could
 * not write for want of a connection, given back once one served.
 */
export const RELEASE_REASONS = ['stop', 'store_unreachable'] as const;
export type ReleaseReason = (typeof RELEASE_REASONS)[number];

/**
 * What a {@link Worker} reports as it runs: `WorkerOptions.metrics`. `WorkerMetrics`
 * (`@onceq/core/metrics`, Prometheus) is the one shipped; this shape names no
 * prom-client type, so the root entry's declarations need no prom-client installed.
 */
export interface MetricsRecorder {
  /** One per message finished, by its queue and outcome. */
  readonly processed: { inc(labels: { queue: string; outcome: Outcome }, value?: number): void };
  /** Heartbeats that extended a lease. */
  readonly extended: { inc(value?: number): void };
  /** Leases found lost (a refused heartbeat or ACK). */
  readonly leaseLost: { inc(value?: number): void };
  /** Messages given back, attempt not spent, by why (see {@link RELEASE_REASONS}). */
  readonly released: { inc(labels: { reason: ReleaseReason }, value?: number): void };
  /** Seconds from a handler starting to its result committed. */
  readonly handlerToAck: { observe(value: number): void };
  /** Seconds from a message becoming claimable to its claim, by its queue. */
  readonly queueWait: { observe(labels: { queue: string }, value: number): void };
  /** Called once the worker listens for wake-ups: `live()` says whether they arrive. */
  watchNotifications(live: () => boolean): void;
  /** Called once where the store has a pool (PostgreSQL): `use()` reads its connections. */
  watchConnections?(use: () => ConnectionUse): void;
}
