import type { WorkerLog } from './log.ts';
import type { StopResult, Worker } from './worker.ts';

/** The signals a service stops on: systemd and Kubernetes send SIGTERM, a terminal SIGINT. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Two-stage shutdown on signals: the first SIGTERM/SIGINT starts a graceful
 * {@link Worker.stop} (no new claims, running handlers finish within `timeoutMs`,
 * unstarted claims released); a second one forces it at once. Resolves with how the
 * worker stopped; removes its listeners then.
 */
export function stopOnSignals(
  worker: Worker,
  options: { timeoutMs: number; log: WorkerLog },
): Promise<StopResult> {
  return new Promise((resolve) => {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      received++;
      if (received === 1) {
        options.log.write(
          'stopping',
          `${signal}: no new claims; waiting up to ${options.timeoutMs / 1000} s for running handlers (send it again to stop at once)`,
          { signal },
        );
        worker.stop({ timeoutMs: options.timeoutMs }).then((result) => {
          for (const s of STOP_SIGNALS) process.off(s, onSignal);
          resolve(result);
        });
      } else {
        options.log.write('forced', `${signal} again: stopping at once`, { signal });
        worker.forceStop();
      }
    };
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
  });
}
