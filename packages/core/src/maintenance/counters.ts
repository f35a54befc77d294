/**
 * The maintained counters of migration 0004 (`onceq_counts`, read by `status`) checked
 * against real counts, and recomputed from them. Counters are derived data, kept in the
 * same transaction as every write onceq makes (SQLite: triggers; PostgreSQL: the claim's
 * and the ACK's own statements, triggers for the rest, migration 0006), so they can only
 * drift when someone edits `onceq_counts` by hand, disables the triggers, restores a
 * table without them, or on PostgreSQL changes a message's state or inserts an effect
 * by hand.
 */
import type { Store } from '../driver/backend.ts';

/** One key whose counter disagrees with the rows it counts. */
export interface CounterDrift {
  /**
   * `state` (messages by state), `queue` (messages by queue and state), `effect` (effects
   * by category) or `storage` (key `payload`: messages that keep their payload).
   */
  kind: 'state' | 'effect' | 'queue' | 'storage';
  /** The state, `queue/state`, the category, or `payload`. */
  key: string;
  /** What the counter says: count, and the sum of `amount_cents` (effects) or of payload bytes. */
  stored: { n: number; total: number };
  /** What the rows say. */
  actual: { n: number; total: number };
}

/**
 * Every key whose counter differs from a real count, in one statement (one snapshot, so
 * a write committing meanwhile cannot show up as drift). Reads every message and effect:
 * for `doctor`, not for a hot path.
 */
export async function findCounterDrift(store: Store): Promise<CounterDrift[]> {
  const rows = await store.read((x) => store.driver.compareCounters(x));
  const drift: CounterDrift[] = [];
  for (const row of rows) {
    const stored = { n: Number(row.sn ?? 0), total: Number(row.st ?? 0) };
    const actual = { n: Number(row.an ?? 0), total: Number(row.at ?? 0) };
    if (
      stored.n !== actual.n ||
      (row.kind !== 'state' && row.kind !== 'queue' && stored.total !== actual.total)
    ) {
      drift.push({ kind: row.kind, key: row.key, stored, actual });
    }
  }
  return drift;
}

/**
 * Replaces the counters with real counts, in one write transaction that keeps writers
 * out meanwhile (the backend's recount lock: SQLite's write lock of `BEGIN IMMEDIATE`,
 * PostgreSQL's `LOCK TABLE … IN SHARE MODE`), so no write falls between the count and
 * the replacement. `onceq doctor --fix`.
 */
export async function recomputeCounters(store: Store): Promise<void> {
  await store.transact(async (x) => {
    await store.driver.lockForRecount(x);
    await store.driver.recount(x);
  });
}
