/**
 * The dedup window's statements (maintenance/prune.ts, `forgetOlderThanSeconds`), the
 * same words on both backends: keyset pages of tombstones finished before a horizon,
 * the deletes that forget a chunk of them with everything that refers to them, and the
 * `onceq_meta` row (`forgotten_before`, migration 0011) that says how far the store has
 * forgotten.
 */
import type { PrunableState } from '../driver.ts';
import { params, type SqlDialect, type SqlText, statement, statementFor } from '../sql-text.ts';

/** The `onceq_meta` key of the forgetting horizon (Unix seconds as text; `0` = never). */
export const FORGOTTEN_BEFORE_KEY = 'forgotten_before';

function perState<Text>(build: (state: PrunableState) => Text): (state: PrunableState) => Text {
  const texts = { done: build('done'), dead: build('dead') };
  return (state) => texts[state];
}

/**
 * What a forgettable tombstone of `state` is, for the row `m`: pruned, finished before
 * placeholder 1, and no delivery of it still waiting to be sent (an endpoint disabled
 * for months keeps its events until they are delivered or die).
 */
function forgettable(state: PrunableState, d: SqlDialect): string {
  return `m.state = '${state}' AND m.pruned_at IS NOT NULL AND m.updated_at < ${d.param(1)}
  AND NOT EXISTS (SELECT 1 FROM ${d.table('deliveries')} w
    WHERE w.event_id = m.event_id AND w.state IN ('pending', 'leased'))`;
}

/**
 * The next `n` forgettable tombstones after the cursor (?2 `available_at`, ?3
 * `event_id`), in `messages_state` order: each page a range scan from the cursor.
 */
export const forgetPage = perState((state) =>
  statementFor(
    `forget-page-${state}`,
    (d, n) => `SELECT m.event_id, m.available_at FROM ${d.table('messages')} m
WHERE ${forgettable(state, d)}
  AND (m.available_at, m.event_id) > (${d.param(2)}, ${d.param(3)})
ORDER BY m.available_at, m.event_id LIMIT ${n}`,
  ),
);

/** Of the ids ?2 … (n of them), those still forgettable now, inside the write transaction. */
export const forgetRecheck = perState((state) =>
  statementFor(
    `forget-recheck-${state}`,
    (d, n) => `SELECT m.event_id FROM ${d.table('messages')} m
WHERE m.event_id IN (${params(d, 2, n)}) AND ${forgettable(state, d)}`,
  ),
);

/** Forgets the positions of the keyed messages among the ids ?1 … (n of them). */
const forgetPositions = statementFor(
  'forget-delete-message_keys',
  (d, n) => `DELETE FROM ${d.table('message_keys')} WHERE (queue, ordering_key, seq) IN (
  SELECT queue, ordering_key, seq FROM ${d.table('messages')}
  WHERE ordering_key IS NOT NULL AND event_id IN (${params(d, 1, n)}))`,
);

const forgetRows = (
  ['delivery_attempts', 'deliveries', 'effects', 'completions', 'messages'] as const
).map((table) =>
  statementFor(
    `forget-delete-${table}`,
    (d, n) => `DELETE FROM ${d.table(table)} WHERE event_id IN (${params(d, 1, n)})`,
  ),
);

/**
 * The deletes that forget the ids ?1 … (n of them), children first (their foreign keys
 * point at `messages`): a keyed message's position where positions live apart
 * (PostgreSQL's `message_keys`), delivery attempts, deliveries, the effect or completion,
 * then the tombstone itself. The counters follow through the tables' delete triggers.
 */
export function forgetDeletes(d: SqlDialect): readonly ((d: SqlDialect, n: number) => SqlText)[] {
  return d.positionsApart ? [forgetPositions, ...forgetRows] : forgetRows;
}

/** The recorded horizon (text), absent on a store without the row. */
export const readForgottenBefore = statement(
  'forgotten-before-read',
  (d) => `SELECT value FROM ${d.table('onceq_meta')} WHERE key = '${FORGOTTEN_BEFORE_KEY}'`,
);

/** Records the horizon ?1 (text): only ever moves it later. */
export const recordForgottenBefore = statement(
  'forgotten-before-write',
  (d) =>
    `INSERT INTO ${d.table('onceq_meta')} AS o (key, value) VALUES ('${FORGOTTEN_BEFORE_KEY}', ${d.param(1)})
ON CONFLICT (key) DO UPDATE SET value = excluded.value
WHERE CAST(o.value AS BIGINT) < CAST(excluded.value AS BIGINT)`,
);
