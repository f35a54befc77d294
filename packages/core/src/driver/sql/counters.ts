/**
 * The maintained counters (`onceq_counts`, migration 0004) against real counts, and their
 * recount: the same SQL on both backends.
 */
import type { Executor } from '../executor.ts';
import { type SqlDialect, statement } from '../sql-text.ts';

/** One key as counted and as the rows say, in one statement (one snapshot). */
export interface CounterRow {
  kind: 'state' | 'effect' | 'queue' | 'storage';
  key: string;
  sn: unknown;
  st: unknown;
  an: unknown;
  at: unknown;
}

/** The `storage` row of the messages that keep their payload (migration 0017), counted. */
const PAYLOADS = (d: SqlDialect) =>
  `SELECT 'storage', 'payload', count(*), coalesce(sum(octet_length(payload)), 0)
    FROM ${d.table('messages')} WHERE payload IS NOT NULL`;

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
    UNION ALL
    ${PAYLOADS(d)}
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

const countPayloadsText = statement(
  'count-payloads',
  (d) => `INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total) ${PAYLOADS(d)}`,
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
  await x.query(countPayloadsText(x.dialect));
}

const storageCountsText = statement(
  'storage-counts',
  (d) => `SELECT
    coalesce(sum(CASE WHEN kind = 'state' THEN n END), 0) AS events,
    coalesce(sum(CASE WHEN kind = 'storage' THEN n END), 0) AS live,
    coalesce(sum(CASE WHEN kind = 'storage' THEN total END), 0) AS payload_bytes
    FROM ${d.table('onceq_counts')}
    WHERE kind = 'state' OR (kind = 'storage' AND key = 'payload')`,
);

/**
 * From the counters, one statement: the messages stored (every state, tombstones
 * included), those that keep their payload, and the payloads' bytes (migration 0017).
 */
export async function storageCounts(x: Executor): Promise<StorageCounts> {
  const row = (
    await x.query<{ events: unknown; live: unknown; payload_bytes: unknown }>(
      storageCountsText(x.dialect),
    )
  ).rows[0];
  return {
    events: Number(row?.events ?? 0),
    live: Number(row?.live ?? 0),
    payloadBytes: Number(row?.payload_bytes ?? 0),
  };
}

/** What {@link storageCounts} reads. */
export interface StorageCounts {
  events: number;
  live: number;
  payloadBytes: number;
}
