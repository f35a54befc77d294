/**
 * The maintained counters (`onceq_counts`, migration 0004) against real counts, and their
 * recount: the same SQL on both backends.
 */
import type { Executor } from '../executor.ts';
import { statement } from '../sql-text.ts';

/** One key as counted and as the rows say, in one statement (one snapshot). */
export interface CounterRow {
  kind: 'state' | 'effect' | 'queue';
  key: string;
  sn: unknown;
  st: unknown;
  an: unknown;
  at: unknown;
}

const compareText = statement(
  'compare-counters',
  (d) => `
  WITH stored AS (
    SELECT kind, key, sum(n) AS n, sum(total) AS total FROM ${d.table('onceq_counts')} GROUP BY kind, key
  ), actual AS (
    SELECT 'state' AS kind, state AS key, count(*) AS n, 0 AS total FROM ${d.table('messages')} GROUP BY state
    UNION ALL
    SELECT 'queue', queue || '/' || state, count(*), 0 FROM ${d.table('messages')}
      WHERE queue <> 'default' GROUP BY queue, state
    UNION ALL
    SELECT 'effect', category, count(*), sum(amount_cents) FROM ${d.table('effects')} GROUP BY category
  ), keys AS (SELECT kind, key FROM stored UNION SELECT kind, key FROM actual)
  SELECT k.kind, k.key, s.n AS sn, s.total AS st, a.n AS an, a.total AS at
  FROM keys k
  LEFT JOIN stored s ON s.kind = k.kind AND s.key = k.key
  LEFT JOIN actual a ON a.kind = k.kind AND a.key = k.key
  ORDER BY k.kind, k.key`,
);

const clearText = statement('clear-counters', (d) => `DELETE FROM ${d.table('onceq_counts')}`);

const countStatesText = statement(
  'count-states',
  (d) => `INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
    SELECT 'state', s.key, (SELECT count(*) FROM ${d.table('messages')} m WHERE m.state = s.key), 0
    FROM (SELECT 'ready' AS key UNION ALL SELECT 'leased' UNION ALL SELECT 'done'
          UNION ALL SELECT 'dead' UNION ALL SELECT 'waiting' UNION ALL SELECT 'skipped') s`,
);

const countQueuesText = statement(
  'count-queues',
  (d) => `INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
    SELECT 'queue', queue || '/' || state, count(*), 0 FROM ${d.table('messages')}
    WHERE queue <> 'default' GROUP BY queue, state`,
);

const countEffectsText = statement(
  'count-effects',
  (d) => `INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
    SELECT 'effect', category, count(*), sum(amount_cents) FROM ${d.table('effects')} GROUP BY category`,
);

/** Every counted or present key, with the counter's and the rows' figures. */
export async function compareCounters(x: Executor): Promise<CounterRow[]> {
  return (await x.query<CounterRow>(compareText(x.dialect))).rows;
}

/** Replaces every counter with a real count, in the caller's write transaction. */
export async function recount(x: Executor): Promise<void> {
  await x.query(clearText(x.dialect));
  await x.query(countStatesText(x.dialect));
  await x.query(countQueuesText(x.dialect));
  await x.query(countEffectsText(x.dialect));
}
