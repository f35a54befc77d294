/**
 * `@onceq/core/metrics`: the worker's Prometheus metrics. Needs the package `prom-client`
 * (an optional peer dependency), loaded at the first `new WorkerMetrics(store)`.
 *
 * @module
 */

export type {
  /** One delivery attempt, as `WorkerMetrics.recordAttempt` counts it. */
  AttemptLog,
  AttemptOutcome,
} from './delivery/sender.ts';
export {
  /** Serves `/metrics` and `/healthz` on 127.0.0.1 (port 0 picks a free one). */
  type MetricsServer,
  serveMetrics,
  /** The worker's counters and histograms plus the queue gauges, read from the store at each scrape. */
  WorkerMetrics,
} from './worker/metrics.ts';
export {
  /** How a processed message ended: the `outcome` label of `onceq_processed_total`. */
  OUTCOMES,
  type Outcome,
  /** Why messages were given back: the `reason` label of `onceq_released_total`. */
  RELEASE_REASONS,
  type ReleaseReason,
} from './worker/metrics-recorder.ts';
