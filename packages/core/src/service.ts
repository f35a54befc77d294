/**
 * `@onceq/core/service`: what running onceq as a service needs besides the `Worker`:
 * the worker's log (human or JSON lines on stderr) and the two-stage shutdown on
 * SIGTERM/SIGINT that `onceq worker` uses (the first signal stops gracefully, a second
 * stops at once). Metrics are `@onceq/core/metrics` (they need `prom-client`).
 *
 * @module
 */
export {
  /** A log writing one line per event to stderr: `'human'` or `'json'` (JSON lines). */
  createLog,
  /** The log formats {@link createLog} takes: `human`, `json`. */
  LOG_FORMATS,
  type LogFields,
  type LogFormat,
  /** A log that writes nothing (the default of `WorkerOptions.log`). */
  silentLog,
  type WorkerLog,
} from './worker/log.ts';
export {
  /** The signals a service stops on: SIGTERM (systemd, Kubernetes) and SIGINT (a terminal). */
  STOP_SIGNALS,
  /**
   * Two-stage shutdown: the first SIGTERM/SIGINT stops the worker gracefully within
   * `timeoutMs`, a second forces it; resolves with how it stopped.
   */
  stopOnSignals,
} from './worker/signals.ts';
