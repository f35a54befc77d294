/** How PostgreSQL's statements count their moves in `onceq_counts` (migrations 0006, 0012). */

/**
 * Every move of a statement counted for the store (`state`, key the state) and, unless
 * its queue is `default`, for its queue (`queue`, key `queue/state`; migration 0012: the
 * default queue's counts are the store's less the others'). Select `COUNT_KIND` from the
 * moves (`queue`, `key`, a delta) `${COUNT_KINDS}`, grouped by its two columns.
 */
export const COUNT_KINDS =
  "JOIN (VALUES ('state'), ('queue')) AS count_kind(kind) ON count_kind.kind = 'state' OR moves.queue <> 'default'";
export const COUNT_KIND =
  "count_kind.kind, CASE count_kind.kind WHEN 'state' THEN key ELSE queue || '/' || key END";
