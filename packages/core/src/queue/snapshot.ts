import type { Store } from '../driver/backend.ts';
import { isMessageState, LESSON_STATES, type MessageState } from '../states.ts';
import type { StateCounts, StatusReport } from '../types.ts';

/** {@link StatusReport} plus the ages an operator (and `/metrics`) watches. */
export interface QueueSnapshot {
  report: StatusReport;
  /** Earliest `available_at` of a message claimable at `now` (ready, not in backoff), or null. */
  oldestReadyAt: number | null;
  /**
   * Earliest `available_at` of a ready message not yet claimable (in backoff), or null:
   * when the next one becomes due.
   */
  nextDueAt: number | null;
  /** Earliest `updated_at` (the time it died) of a dead message, or null. */
  oldestDeadAt: number | null;
  /** The clock reading the ages are relative to. */
  now: number;
}

/**
 * Counts by state, effects and money by category, and the oldest ready and dead times,
 * read by **one statement**: one snapshot on both backends, so `done` and `effects`
 * can never disagree because an ACK committed between two reads.
 *
 * The counts come from `onceq_counts`, kept by triggers in the same transaction as every
 * write (migration 0004): a few rows (SQLite: one per key; PostgreSQL: delta rows summed
 * per key, folded now and then), so `status` costs the same on 1,000 or 1,000,000
 * messages. The heads are the first entries of index ranges (`messages_ready_queue`,
 * one range per queue, for the oldest ready and the next due, the partial `messages_dead` for the oldest dead; the SQL is each backend's
 * `Driver.snapshot`). Stored values only: an
 * expired lease counts as leased until the next claim recovers it. `onceq doctor`
 * checks the counters against real counts.
 *
 * With `queue`, the same figures for that queue alone (its messages, their effects and
 * heads), still one statement, but counted from its messages ({@link countsByQueue}
 * reads every queue's counts from the counters).
 */
export async function queueSnapshot(
  store: Store,
  options: { queue?: string } = {},
): Promise<QueueSnapshot> {
  const now = store.clock();
  const { queue } = options;
  const rows =
    queue === undefined
      ? await store.driver.snapshot(store, now)
      : await store.read((x) => store.driver.queueSnapshot(x, now, queue));
  // The lesson's states always; `waiting` and `skipped` only when some message is in one.
  const messages = Object.fromEntries(LESSON_STATES.map((s) => [s, 0])) as StateCounts;
  const totals: Record<string, number> = {};
  let effects = 0;
  let total = 0;
  let oldestReadyAt: number | null = null;
  let oldestDeadAt: number | null = null;
  let nextDueAt: number | null = null;
  const categories = rows.filter((r) => r.kind === 'effect').sort((a, b) => cmp(a.k, b.k));
  for (const row of rows) {
    if (row.kind === 'state' && row.k !== null && isMessageState(row.k)) {
      const n = Number(row.n);
      if (n !== 0 || row.k in messages) messages[row.k as MessageState] = n;
    } else if (row.kind === 'ready' && row.v !== null) oldestReadyAt = Number(row.v);
    else if (row.kind === 'due' && row.v !== null) nextDueAt = Number(row.v);
    else if (row.kind === 'dead' && row.v !== null) oldestDeadAt = Number(row.v);
  }
  for (const row of categories) {
    totals[row.k as string] = Number(row.v);
    effects += Number(row.n);
    total += Number(row.v);
  }
  return {
    report: { messages, effects, totals, total },
    oldestReadyAt,
    nextDueAt,
    oldestDeadAt,
    now,
  };
}

function cmp(a: string | null, b: string | null): number {
  return (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;
}

/**
 * Messages by state in each queue that holds any, by queue name: the lesson's four states
 * always, `waiting` and `skipped` when some message is in one. Read from the maintained
 * counters (migration 0012) by one statement: a few rows per queue, whatever the size of
 * the store.
 */
export async function countsByQueue(store: Store): Promise<Record<string, StateCounts>> {
  const rows = await store.read((x) => store.driver.countsByQueue(x));
  const queues: Record<string, StateCounts> = {};
  for (const row of rows) {
    if (!isMessageState(row.state) || Number(row.n) === 0) continue;
    let counts = queues[row.queue];
    if (counts === undefined) {
      counts = Object.fromEntries(LESSON_STATES.map((s) => [s, 0])) as StateCounts;
      queues[row.queue] = counts;
    }
    counts[row.state] = Number(row.n);
  }
  return queues;
}
