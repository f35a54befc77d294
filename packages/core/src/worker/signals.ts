import type { WorkerLog } from './log.ts';
import type { StopResult } from './options.ts';
import type { Worker } from './worker.ts';

/** The signals a service stops on: systemd and Kubernetes send SIGTERM, a terminal SIGINT. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** One of {@link STOP_SIGNALS}. */
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** Options of {@link stopOnSignals}. */
export interface StopOnSignalsOptions {
  /** How long running handlers may finish after the first signal before the stop is forced. */
  timeoutMs: number;
  /** Where the `stopping` and `forced` events are written. */
  log: WorkerLog;
  /**
   * Called on each signal before the worker is told: `stopping` for the first (graceful),
   * `forced` for any later one. Default: nothing beyond the log.
   */
  onSignal?: (signal: StopSignal, stage: 'stopping' | 'forced') => void;
}

/** How a worker under {@link stopOnSignals} ended, and the signal that stopped it. */
export interface SignalStop extends StopResult {
  /** The first stop signal received, or null when the worker ended without one (a drain). */
  signal: StopSignal | null;
}

/**
 * Two-stage shutdown on signals: the first SIGTERM/SIGINT starts a graceful
 * {@link Worker.stop} (no new claims, running handlers finish within `timeoutMs`,
 * unstarted claims released); a second one forces it at once. Call it before or after
 * `worker.start()`. Resolves once the worker has ended, by a signal or by itself (a
 * drain), with how it stopped; rejects when a drain failed. Its listeners are removed
 * then, either way.
 */
export async function stopOnSignals(
  worker: Worker,
  options: StopOnSignalsOptions,
): Promise<SignalStop> {
  let first: StopSignal | null = null;
  let stopping: Promise<StopResult> | undefined;
  const onSignal = (signal: StopSignal) => {
    if (stopping === undefined) {
      first = signal;
      options.onSignal?.(signal, 'stopping');
      options.log.write(
        'stopping',
        `${signal}: no new claims; waiting up to ${options.timeoutMs / 1000} s for running handlers (send it again to stop at once)`,
        { signal },
      );
      stopping = worker.stop({ timeoutMs: options.timeoutMs });
    } else {
      options.onSignal?.(signal, 'forced');
      options.log.write('forced', `${signal} again: stopping at once`, { signal });
      worker.forceStop();
    }
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  try {
    await worker.finished();
    return { ...(await (stopping ?? worker.stop())), signal: first };
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  }
}
