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
  /** How a worker under {@link stopOnSignals} ended, with the first signal (null: it ended by itself). */
  type SignalStop,
  /** The signals a service stops on: SIGTERM (systemd, Kubernetes) and SIGINT (a terminal). */
  STOP_SIGNALS,
  /** Options of {@link stopOnSignals}: `timeoutMs`, `log`, `onSignal`. */
  type StopOnSignalsOptions,
  /** `'SIGTERM' | 'SIGINT'`. */
  type StopSignal,
  /**
   * Two-stage shutdown: the first SIGTERM/SIGINT stops the worker gracefully within
   * `timeoutMs`, a second forces it; resolves once the worker ended (by a signal or, for
   * a drain, by itself) with how it stopped, and removes its listeners.
   */
  stopOnSignals,
} from './worker/signals.ts';
