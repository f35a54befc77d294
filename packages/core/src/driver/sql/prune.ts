/**
 * Prune's statements (maintenance/prune.ts), the same words on both backends: the count
 * of a dry run, the keyset page of candidates, and the chunk's UPDATE that turns each
 * row into a tombstone. The state is written as a literal (one text per prunable
 * state), so the planner matches it against the leading column of `messages_state` when
 * it prepares the statement.
 */
import type { PrunableState } from '../driver.ts';
import { statement, statementFor } from '../sql-text.ts';

function perState<Text>(build: (state: PrunableState) => Text): (state: PrunableState) => Text {
  const texts = { done: build('done'), dead: build('dead') };
  return (state) => texts[state];
}

/** {@link perState} for every queue and for one queue. */
function perStateAndQueue<Text>(
  build: (state: PrunableState, ofQueue: boolean) => Text,
): (state: PrunableState, ofQueue: boolean) => Text {
  const all = perState((state) => build(state, false));
  const one = perState((state) => build(state, true));
  return (state, ofQueue) => (ofQueue ? one : all)(state);
}

/** Finished messages of `state` (of the queue ?2), not yet pruned, finished before ?1. */
export const prunableCount = perStateAndQueue((state, ofQueue) =>
  statement(
    `prune-count-${state}${ofQueue ? '-queue' : ''}`,
    (d) => `SELECT count(*) AS n FROM ${d.table('messages')}
WHERE state = '${state}' AND pruned_at IS NULL AND updated_at < ${d.param(1)}${ofQueue ? ` AND queue = ${d.param(2)}` : ''}`,
  ),
);

/**
 * The next `n` candidates after the cursor (?2 `available_at`, ?3 `event_id`), in
 * `messages_state` order (state, available_at, event_id), finished before ?1 (and of the
 * queue ?4): each page is a range scan from the cursor, never a scan of every done row.
 * The first page's cursor is `(-1, '')`.
 */
export const prunePage = perStateAndQueue((state, ofQueue) =>
  statementFor(
    `prune-page-${state}${ofQueue ? '-queue' : ''}`,
    (d, n) => `SELECT event_id, payload, available_at FROM ${d.table('messages')}
WHERE state = '${state}' AND pruned_at IS NULL AND updated_at < ${d.param(1)}${ofQueue ? ` AND queue = ${d.param(4)}` : ''}
  AND (available_at, event_id) > (${d.param(2)}, ${d.param(3)})
ORDER BY available_at, event_id LIMIT ${n}`,
  ),
);

/**
 * The tombstones of `n` rows (ids ?3 …, their SHA-256s after them): payload gone,
 * `pruned_at` ?1, each its own hash. The `WHERE` repeats every condition of the page
 * (finished before ?2), so a message redriven since is skipped. Each id is bound once,
 * for both the CASE and the IN list.
 */
export const pruneRows = perState((state) =>
  statementFor(`prune-rows-${state}`, (d, n) => {
    const cases = new Array<string>(n);
    const ids = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      ids[i] = d.param(3 + i);
      cases[i] = `WHEN ${ids[i]} THEN ${d.param(3 + n + i)}`;
    }
    return `UPDATE ${d.table('messages')} SET
  payload = NULL, pruned_at = ${d.param(1)}, payload_sha256 = CASE event_id ${cases.join(' ')} END
WHERE event_id IN (${ids.join(', ')}) AND state = '${state}' AND pruned_at IS NULL
  AND updated_at < ${d.param(2)}`;
  }),
);

/** The values {@link pruneRows} binds for `rows`: now, the bound, the ids, their hashes. */
export function pruneValues(
  rows: readonly { eventId: string; sha256: string }[],
  now: number,
  before: number,
): unknown[] {
  const n = rows.length;
  const values = new Array<unknown>(2 + 2 * n);
  values[0] = now;
  values[1] = before;
  for (let i = 0; i < n; i++) {
    const row = rows[i] as { eventId: string; sha256: string };
    values[2 + i] = row.eventId;
    values[2 + n + i] = row.sha256;
  }
  return values;
}
