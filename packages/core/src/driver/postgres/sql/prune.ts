/**
 * PostgreSQL's prune of a chunk: the shared UPDATE that turns rows into tombstones
 * (driver/sql/prune.ts), as a step of a statement that also counts the payloads it
 * dropped in `onceq_counts` (the `storage` row, migration 0017), as the claim and the ACK
 * count their own moves. A step reading the same ids before the update (every step sees
 * the statement's one snapshot) gives each dropped payload's size; only the rows the
 * update really changed are counted. Returns how many it changed.
 */
import type { PrunableState } from '../../driver.ts';
import type { Executor } from '../../executor.ts';
import { pruneRows, pruneValues } from '../../sql/prune.ts';
import { params, statementFor } from '../../sql-text.ts';

const countedText = (state: PrunableState) =>
  statementFor(`prune-rows-counted-${state}`, (d, n) => {
    const messages = d.table('messages');
    return `WITH before AS (
  SELECT event_id, octet_length(payload) AS bytes FROM ${messages} WHERE event_id IN (${params(d, 3, n)})
), pruned AS (
  ${pruneRows(state)(d, n).sql}
  RETURNING event_id
), counted AS (
  INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
  SELECT 'storage', 'payload', -count(*), -coalesce(sum(before.bytes), 0)
  FROM pruned JOIN before USING (event_id) HAVING count(*) > 0
)
SELECT count(*) AS n FROM pruned`;
  });

const texts = { done: countedText('done'), dead: countedText('dead') };

/** The tombstones of `rows` (see `Driver.pruneRows`), their payloads counted out. */
export async function pruneRowsCounted(
  x: Executor,
  state: PrunableState,
  rows: readonly { eventId: string; sha256: string }[],
  now: number,
  before: number,
): Promise<number> {
  if (rows.length === 0) return 0;
  const { rows: counted } = await x.query<{ n: string | number }>(
    texts[state](x.dialect, rows.length),
    pruneValues(rows, now, before),
  );
  return Number(counted[0]?.n ?? 0);
}
