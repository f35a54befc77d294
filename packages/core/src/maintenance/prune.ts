/**
 * Retention that keeps dedup: `prune` removes the payload of old finished messages and
 * keeps a narrow tombstone in the same row (event id, final state, finish time
 * `updated_at`, `payload_sha256`, `pruned_at`). A repeat of a pruned event is still a
 * duplicate and a changed payload still a conflict (see queue/enqueue.ts). Effects
 * (the money) are never touched by a prune; `ready` and `leased` messages never pruned.
 *
 * The dedup window, chosen by the operator: `forgetOlderThanSeconds` deletes tombstones
 * of messages finished longer ago than that (with their effect or completion and
 * delivered webhooks), and records the horizon in `onceq_meta` first. Off by default:
 * tombstones stay forever.
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
  /**
   * Only messages of this queue. Default: every queue. Not with
   * {@link forgetOlderThanSeconds}: the dedup window is the store's, as event ids are.
   */
  queue?: string;
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
  /**
   * The dedup window: delete the tombstones (pruned messages, done or dead) of messages
   * finished more than this many seconds ago, with their effect or completion rows and
   * their finished deliveries. A repeat of a forgotten event is no longer recognised.
   * At least {@link DEDUP_WINDOW_FLOOR_SECONDS} (3 days) unless {@link force}. Default:
   * never (tombstones stay forever).
   */
  forgetOlderThanSeconds?: number;
  /** Allows a {@link forgetOlderThanSeconds} below the 3-day floor. */
  force?: boolean;
  /** Stops between two chunks when aborted (a worker shutting down); the result counts what was pruned. */
  signal?: AbortSignal;
  /** Called after each chunk with the running totals (progress for people). */
  onChunk?: (progress: { state: PrunableState; pruned: number; forgotten?: boolean }) => void;
}

export interface PruneResult {
  /** Messages pruned (or, with `dryRun`, that would be) per state. */
  done: number;
  dead: number;
  dryRun: boolean;
  /** The cutoffs used, Unix seconds: messages finished before these. `null` = state not asked. */
  doneBefore: number | null;
  deadBefore: number | null;
  /** Tombstones forgotten (deleted), or with `dryRun` that would be. */
  forgotten: number;
  /** The forgetting horizon, Unix seconds: tombstones finished before it. `null` = not asked. */
  forgottenBefore: number | null;
  /**
   * Free pages given back to the file system afterwards without a full VACUUM (SQLite
   * stores created with incremental auto-vacuum); 0 elsewhere.
   */
  pagesReleased: number;
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

/**
 * The shortest dedup window without `force`: 3 days, the longest common sender retry
 * horizon (Standard Webhooks' example schedule ends after about 3 days; Stripe retries
 * webhooks for 3 days).
 */
export const DEDUP_WINDOW_FLOOR_SECONDS = 3 * 86_400;

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
  const forget = options.forgetOlderThanSeconds;
  if (ages.every(([, age]) => age === undefined) && forget === undefined) {
    throw new PruneArgumentError(
      'nothing to prune: give --done-older-than, --dead-older-than or --forget-older-than',
    );
  }
  if (forget !== undefined) checkDedupWindow(forget, options.force === true);
  const { queue } = options;
  if (forget !== undefined && queue !== undefined) {
    throw new PruneArgumentError(
      "the dedup window is the whole store's (an event id is unique in the store, whatever its queue): give --forget-older-than without --queue",
    );
  }
  const now = store.clock();
  const result: PruneResult = {
    done: 0,
    dead: 0,
    dryRun: options.dryRun === true,
    doneBefore: null,
    deadBefore: null,
    forgotten: 0,
    forgottenBefore: null,
    pagesReleased: 0,
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
      ? await store.read((x) => store.driver.countPrunable(x, state, before, queue))
      : await pruneState(store, { state, before, queue }, now, chunk, pace);
  }
  if (forget !== undefined) {
    const before = now - forget;
    result.forgottenBefore = before;
    result.forgotten = await forgetBefore(store, before, options.dryRun === true, chunk, pace);
  }
  const changed = !options.dryRun && result.done + result.dead + result.forgotten > 0;
  if (changed && options.vacuum) {
    result.vacuumed = await store.read((x) => store.driver.vacuum(x));
  } else if (changed) {
    result.pagesReleased = await releaseFreePages(store, pace);
  }
  return result;
}

/**
 * Checks a dedup window: whole seconds and, without `force`, at least the 3-day floor.
 * `shown` is how the caller's user wrote it (`90d`); throws {@link PruneArgumentError}.
 */
export function checkDedupWindow(seconds: number, force: boolean, shown = `${seconds}s`): void {
  if (!Number.isInteger(seconds) || seconds < 0) {
    throw new PruneArgumentError(
      `the dedup window (--forget-older-than ${shown}) must be whole seconds ≥ 0`,
    );
  }
  if (seconds < DEDUP_WINDOW_FLOOR_SECONDS && !force) {
    throw new PruneArgumentError(
      `--forget-older-than ${shown} is below the 3-day floor: senders retry for up to 3 days (Stripe, Standard Webhooks) and a retry of a forgotten event is applied again; give at least 3d (onceq prune --force goes below it)`,
    );
  }
}

/**
 * Forgets the tombstones finished before `before`, done then dead, in chunks. The
 * horizon is recorded first, in its own transaction: from then on enqueue refuses a
 * time-ordered id made before it that the store no longer holds, so no repeat slips
 * through while the chunks are deleted. A dry run counts by the same pages.
 */
async function forgetBefore(
  store: Store,
  before: number,
  dryRun: boolean,
  chunk: number,
  pace: Pace,
): Promise<number> {
  if (!dryRun) await store.transact((x) => store.driver.recordForgottenBefore(x, before));
  let forgotten = 0;
  for (const state of PRUNABLE_STATES) {
    let after = { availableAt: -1, eventId: '' };
    while (pace.signal?.aborted !== true) {
      const started = performance.now();
      const rows = await store.read((x) => store.driver.forgetPage(x, state, before, after, chunk));
      if (rows.length === 0) break;
      const last = rows[rows.length - 1] as { event_id: string; available_at: number };
      after = { availableAt: Number(last.available_at), eventId: last.event_id };
      if (dryRun) {
        forgotten += rows.length;
      } else {
        const ids = rows.map((r) => r.event_id);
        forgotten += await store.transact((x) => store.driver.forgetRows(x, state, ids, before));
        pace.onChunk?.({ state, pruned: forgotten, forgotten: true });
      }
      if (rows.length < chunk) break;
      const busy = performance.now() - started;
      if (!dryRun) await pause((busy * (1 - pace.duty)) / pace.duty, pace.signal);
    }
  }
  return forgotten;
}

/** Free pages given back per write transaction after a prune. */
const RELEASE_STEP_PAGES = 1000;

/**
 * Gives the pages prune freed back to the file system, a step of
 * {@link RELEASE_STEP_PAGES} per write transaction, paced like the chunks: never one
 * exclusive rewrite of the file. Nothing to do on PostgreSQL or an older SQLite store.
 */
async function releaseFreePages(store: Store, pace: Pace): Promise<number> {
  let released = 0;
  while (pace.signal?.aborted !== true) {
    const started = performance.now();
    const pages = await store.transact((x) => store.driver.releaseFreePages(x, RELEASE_STEP_PAGES));
    released += pages;
    if (pages < RELEASE_STEP_PAGES) break;
    const busy = performance.now() - started;
    await pause((busy * (1 - pace.duty)) / pace.duty, pace.signal);
  }
  return released;
}

/** How far the store has forgotten: Unix seconds, 0 when it never has (the default). */
export async function forgottenBefore(store: Store): Promise<number> {
  return store.read((x) => store.driver.readForgottenBefore(x));
}

/** How prune shares the store: its duty cycle, when to stop, whom to tell. */
interface Pace {
  duty: number;
  signal: AbortSignal | undefined;
  onChunk: PruneOptions['onChunk'];
}

/** Which messages one pass of prune takes: of `state`, finished before `before`, of `queue` if given. */
interface PruneTarget {
  state: PrunableState;
  before: number;
  queue: string | undefined;
}

async function pruneState(
  store: Store,
  { state, before, queue }: PruneTarget,
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
    const rows = await store.read((x) =>
      store.driver.prunePage(x, state, before, after, chunk, queue),
    );
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
