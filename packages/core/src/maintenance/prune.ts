/**
 * Retention that keeps dedup: `prune` removes the payload of old finished messages and
 * keeps a narrow tombstone in the same row (event id, final state, finish time
 * `updated_at`, `payload_sha256`, `pruned_at`). A repeat of a pruned event is still a
 * duplicate and a changed payload still a conflict (see protocol/enqueue.ts). Effects
 * (the money) are never touched; `ready` and `leased` messages never pruned.
 */
import type { Store } from '../driver/backend.ts';
import { OnceqError } from '../errors.ts';
import { payloadSha256 } from './enqueue-checks.ts';

/** The finished states prune may touch. `ready` and `leased` are never pruned. */
export const PRUNABLE_STATES = ['done', 'dead'] as const;
export type PrunableState = (typeof PRUNABLE_STATES)[number];

export interface PruneOptions {
  /** Prune `done` messages finished (`updated_at`) more than this many seconds ago. */
  doneOlderThanSeconds?: number;
  /** Prune `dead` messages that died more than this many seconds ago. */
  deadOlderThanSeconds?: number;
  /** Count what would go, change nothing. Default false. */
  dryRun?: boolean;
  /**
   * Rows per write transaction. Default 500: each transaction holds SQLite's write lock
   * for a few milliseconds, so a worker on the same file keeps claiming between them.
   */
  chunkSize?: number;
  /**
   * SQLite only: run `VACUUM` afterwards to give the freed pages back to the file system.
   * Default false: VACUUM rewrites the whole file under an exclusive lock (workers wait
   * for its whole duration), while without it the freed pages are reused by new
   * messages, so the file stops growing. Ignored on PostgreSQL (autovacuum's job).
   */
  vacuum?: boolean;
  /**
   * The share of wall time prune may keep busy, from 0.01 to 1. After each chunk (read,
   * hash, write) it pauses `busy × (1 − dutyCycle) / dutyCycle`: with the default
   * {@link DEFAULT_PRUNE_DUTY_CYCLE} (0.1) a chunk that took 5 ms is followed by 45 ms
   * of nothing, so a worker on the same store gets the write lock (SQLite has one) and
   * the CPU for at least 90 % of the time, and prune takes about ten times as long as
   * flat out. 1 = no pause (fastest, for a store nobody else is using).
   */
  dutyCycle?: number;
  /** Stops between two chunks when aborted (a worker shutting down); the result counts what was pruned. */
  signal?: AbortSignal;
  /** Called after each chunk with the running totals (progress for people). */
  onChunk?: (progress: { state: PrunableState; pruned: number }) => void;
}

export interface PruneResult {
  /** Messages pruned (or, with `dryRun`, that would be) per state. */
  done: number;
  dead: number;
  dryRun: boolean;
  /** The cutoffs used, Unix seconds: messages finished before these. `null` = state not asked. */
  doneBefore: number | null;
  deadBefore: number | null;
  /** Whether VACUUM ran. */
  vacuumed: boolean;
  /** The duty cycle it ran with ({@link PruneOptions.dutyCycle}). */
  dutyCycle: number;
}

/** Prune was called without anything to prune (no age given) or with a bad value. Exit code 2. */
export class PruneArgumentError extends OnceqError {
  constructor(message: string) {
    super('prune_argument', 2, message);
  }
}

/** Default rows per transaction. */
export const DEFAULT_PRUNE_CHUNK = 500;

/** Default {@link PruneOptions.dutyCycle}: prune busy at most a tenth of the time. */
export const DEFAULT_PRUNE_DUTY_CYCLE = 0.1;

/**
 * Removes the payloads of finished messages older than the given ages, in chunks of
 * `chunkSize` rows per write transaction. Each chunk is read without the write lock,
 * then updated in a short transaction whose `WHERE` repeats every condition (state, not
 * yet pruned, finished before the cutoff), so a message redriven in between is skipped.
 * Safe to run while workers run, and to run again (already pruned rows are skipped).
 *
 * Schedule it from cron or a systemd timer (`onceq prune --done-older-than 30d`), or
 * call it from your own process.
 */
export async function prune(store: Store, options: PruneOptions): Promise<PruneResult> {
  const chunk = options.chunkSize ?? DEFAULT_PRUNE_CHUNK;
  if (!Number.isInteger(chunk) || chunk < 1 || chunk > 5000) {
    throw new PruneArgumentError(`chunk size ${chunk} is not an integer from 1 to 5000`);
  }
  const duty = options.dutyCycle ?? DEFAULT_PRUNE_DUTY_CYCLE;
  if (!(duty >= 0.01 && duty <= 1)) {
    throw new PruneArgumentError(`duty cycle ${duty} is not a number from 0.01 to 1`);
  }
  const pace: Pace = { duty, signal: options.signal, onChunk: options.onChunk };
  const ages: [PrunableState, number | undefined][] = [
    ['done', options.doneOlderThanSeconds],
    ['dead', options.deadOlderThanSeconds],
  ];
  if (ages.every(([, age]) => age === undefined)) {
    throw new PruneArgumentError('nothing to prune: give --done-older-than or --dead-older-than');
  }
  const now = store.clock();
  const result: PruneResult = {
    done: 0,
    dead: 0,
    dryRun: options.dryRun === true,
    doneBefore: null,
    deadBefore: null,
    vacuumed: false,
    dutyCycle: duty,
  };
  for (const [state, age] of ages) {
    if (age === undefined) continue;
    if (!Number.isInteger(age) || age < 0) {
      throw new PruneArgumentError(`the age for ${state} messages must be whole seconds ≥ 0`);
    }
    const before = now - age;
    result[state === 'done' ? 'doneBefore' : 'deadBefore'] = before;
    result[state] = options.dryRun
      ? await countPrunable(store, state, before)
      : await pruneState(store, state, before, now, chunk, pace);
  }
  if (options.vacuum && !options.dryRun && result.done + result.dead > 0) {
    result.vacuumed = await store.read((x) => store.driver.vacuum(x));
  }
  return result;
}

async function countPrunable(store: Store, state: PrunableState, before: number): Promise<number> {
  return store.read((x) => store.driver.countPrunable(x, state, before));
}

/** How prune shares the store: its duty cycle, when to stop, whom to tell. */
interface Pace {
  duty: number;
  signal: AbortSignal | undefined;
  onChunk: PruneOptions['onChunk'];
}

async function pruneState(
  store: Store,
  state: PrunableState,
  before: number,
  now: number,
  chunk: number,
  pace: Pace,
): Promise<number> {
  let pruned = 0;
  // Every stored id is non-empty and every time ≥ 0: the first page starts after (-1, '').
  let after = { availableAt: -1, eventId: '' };
  while (pace.signal?.aborted !== true) {
    const started = performance.now();
    // Read outside the write lock; the payload of a finished message never changes.
    const rows = await store.read((x) => store.driver.prunePage(x, state, before, after, chunk));
    if (rows.length === 0) break;
    const last = rows[rows.length - 1] as { event_id: string; available_at: number };
    after = { availableAt: Number(last.available_at), eventId: last.event_id };
    const tombstones = rows.map((r) => ({ eventId: r.event_id, sha256: payloadSha256(r.payload) }));
    const readMs = performance.now() - started;
    let locked = 0;
    pruned += await store.transact(async (x) => {
      locked = performance.now();
      return store.driver.pruneRows(x, state, tombstones, now, before);
    });
    pace.onChunk?.({ state, pruned });
    if (rows.length < chunk) break;
    // The duty cycle: leave the write lock and the CPU to workers (of this process or
    // others) for (1 − duty) of the time. Wall time, not the store's clock: this paces
    // real work and decides nothing about messages.
    // Busy = reading and hashing + holding the write lock (COMMIT included), not the wait
    // for the lock: time spent waiting is a worker's turn, not prune's.
    const busy = readMs + (performance.now() - locked);
    await pause((busy * (1 - pace.duty)) / pace.duty, pace.signal);
  }
  return pruned;
}

/** Resolves after `ms` (at least a turn of the event loop), or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
