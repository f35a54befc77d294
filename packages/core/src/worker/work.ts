import type { Store } from '../driver/backend.ts';
import type { Handler } from '../handler/contract.ts';
import { Worker, type WorkerOptions } from './worker.ts';

export interface WorkOptions
  extends Pick<
    WorkerOptions,
    | 'batch'
    | 'concurrency'
    | 'claimAhead'
    | 'max'
    | 'handlerTimeoutMs'
    | 'attempts'
    | 'backoff'
    | 'leaseSeconds'
    | 'onDead'
    | 'queues'
  > {
  /** Called after every recorded batch, for progress output. */
  onProgress?: (summary: Readonly<WorkSummary>) => void;
}

export interface WorkSummary {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Leases found lost at the ACK (another claim or an expiry got there first). */
  lost: number;
}

/**
 * The library's one-shot drain: the {@link Worker} loop in drain mode, claim → handler →
 * fenced ACK (or the failure) until nothing is claimable now or `max` messages were
 * claimed. A store error rejects (the messages it held stay leased until their leases
 * run out, then lazy recovery gives them back, as after a crash); a handler that throws
 * is a failure of its own message, never of the loop; a lost lease is counted and
 * skipped.
 */
export async function work(
  store: Store,
  handler: Handler,
  options: WorkOptions = {},
): Promise<WorkSummary> {
  const { onProgress, ...rest } = options;
  const worker = new Worker(store, handler, {
    ...rest,
    drain: true,
    ...(onProgress === undefined ? {} : { onProgress: (s) => onProgress(workSummary(s)) }),
  });
  await worker.start();
  return workSummary(await worker.finished());
}

function workSummary(s: Readonly<WorkSummary>): WorkSummary {
  return { claimed: s.claimed, done: s.done, retried: s.retried, dead: s.dead, lost: s.lost };
}
