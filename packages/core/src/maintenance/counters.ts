/**
 * The maintained counters of migration 0004 (`onceq_counts`, read by `status`) checked
 * against real counts, and recomputed from them. Counters are derived data: triggers
 * keep them in the same transaction as every write, so they can only drift when someone
 * edits `onceq_counts` by hand, disables the triggers, or restores a table without them.
 */
import { sql } from 'kysely';
import type { Store } from '../driver/backend.ts';

/** One key whose counter disagrees with the rows it counts. */
export interface CounterDrift {
  /** `state` (messages by state) or `effect` (effects by category). */
  kind: 'state' | 'effect';
  /** The state or the category. */
  key: string;
  /** What the counter says: count, and for effects the sum of `amount_cents`. */
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
  const { rows } = await sql<{
    kind: 'state' | 'effect';
    key: string;
    sn: unknown;
    st: unknown;
    an: unknown;
    at: unknown;
  }>`
    WITH stored AS (
      SELECT kind, key, sum(n) AS n, sum(total) AS total FROM onceq_counts GROUP BY kind, key
    ), actual AS (
      SELECT 'state' AS kind, state AS key, count(*) AS n, 0 AS total FROM messages GROUP BY state
      UNION ALL
      SELECT 'effect', category, count(*), sum(amount_cents) FROM effects GROUP BY category
    ), keys AS (SELECT kind, key FROM stored UNION SELECT kind, key FROM actual)
    SELECT k.kind, k.key, s.n AS sn, s.total AS st, a.n AS an, a.total AS at
    FROM keys k
    LEFT JOIN stored s ON s.kind = k.kind AND s.key = k.key
    LEFT JOIN actual a ON a.kind = k.kind AND a.key = k.key
    ORDER BY k.kind, k.key`.execute(store.db);
  const drift: CounterDrift[] = [];
  for (const row of rows) {
    const stored = { n: Number(row.sn ?? 0), total: Number(row.st ?? 0) };
    const actual = { n: Number(row.an ?? 0), total: Number(row.at ?? 0) };
    if (stored.n !== actual.n || (row.kind === 'effect' && stored.total !== actual.total)) {
      drift.push({ kind: row.kind, key: row.key, stored, actual });
    }
  }
  return drift;
}

/**
 * Replaces the counters with real counts, in one write transaction that keeps writers
 * out meanwhile (SQLite: the write lock of `BEGIN IMMEDIATE`; PostgreSQL: `LOCK TABLE
 * … IN SHARE MODE`, which waits for running writes and blocks new ones until COMMIT),
 * so no write falls between the count and the replacement. `onceq doctor --fix`.
 */
export async function recomputeCounters(store: Store): Promise<void> {
  await store.writeTransaction(async (trx) => {
    if (store.kind === 'postgres') {
      await sql`LOCK TABLE messages, effects IN SHARE MODE`.execute(trx);
    }
    await sql`DELETE FROM onceq_counts`.execute(trx);
    await sql`INSERT INTO onceq_counts (kind, key, n, total)
      SELECT 'state', s.key, (SELECT count(*) FROM messages m WHERE m.state = s.key), 0
      FROM (SELECT 'ready' AS key UNION ALL SELECT 'leased' UNION ALL SELECT 'done'
            UNION ALL SELECT 'dead') s`.execute(trx);
    await sql`INSERT INTO onceq_counts (kind, key, n, total)
      SELECT 'effect', category, count(*), sum(amount_cents) FROM effects GROUP BY category`.execute(
      trx,
    );
  });
}
