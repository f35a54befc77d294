/**
 * PostgreSQL's release of ordering keys (docs/ordering.md, migration 0013): when a
 * statement finishes keyed messages (`done`, `skipped`, or `dead` under `on_dead =
 * 'skip'`), the same statement makes each key's next message `waiting` → `ready`, with
 * one call of `onceq_release_next` for all of them.
 *
 * The call is the step {@link releaseStep} of the statements that finish messages on
 * the hot path (the result template's ACKs and failures, the claim's recovery) and a
 * statement of its own after `skip`. The function takes the keys' advisory locks in
 * sorted order, then finds each next message in a statement of its own, which starts
 * after the locks are held and so sees every enqueue of these keys committed (an enqueue
 * takes the same locks before it reads a key's last message), and sees what the calling
 * statement wrote before it (a volatile function reads the caller's own changes).
 */
import type { Executor } from '../../executor.ts';
import { type SqlDialect, statement } from '../../sql-text.ts';

/**
 * The columns a source step of {@link releaseStep} returns for each message it moved:
 * the message's key and position, and what decides whether it released its key.
 */
export const RELEASE_COLUMNS = 'm.queue, m.ordering_key, m.seq, m.state, m.on_dead';

/**
 * `released`: the next messages of the keys the `sources` steps finished (each returning
 * {@link RELEASE_COLUMNS}) made ready, `n` of them, with `now` from placeholder 1. A
 * statement that finishes no keyed message never calls the function (no row to
 * aggregate), so messages without a key pay nothing for it. The step is read by the
 * statement's counting step ({@link releasedMoves}): a step nothing reads never runs.
 */
export function releaseStep(d: SqlDialect, sources: readonly string[]): string {
  const finished = sources
    .map(
      (source) => `SELECT queue, ordering_key, seq FROM ${source}
        WHERE ordering_key IS NOT NULL
          AND (state IN ('done', 'skipped') OR (state = 'dead' AND on_dead = 'skip'))`,
    )
    .join('\n        UNION ALL ');
  return `released AS (
      SELECT ${d.schema}.onceq_release_next(
        array_agg(queue), array_agg(ordering_key), array_agg(seq), ${d.now(1)}) AS n
      FROM (${finished}) AS finished
      HAVING count(*) > 0
    )`;
}

/** The counters' rows of {@link releaseStep}'s moves, for a `(key, n)` union of moves. */
export const releasedMoves = `
        UNION ALL SELECT 'waiting', -n FROM released
        UNION ALL SELECT 'ready', n FROM released`;

/** The function on its own, for a write that finishes messages in a statement of its own. */
const releaseText = statement(
  'release-next',
  (d) =>
    `SELECT ${d.schema}.onceq_release_next($1::text[], $2::text[], $3::bigint[], ${d.now(4)}) AS n`,
);

/** A message that finished: its key and position. */
export interface FinishedKey {
  queue: string;
  ordering_key: string | null;
  seq: unknown;
}

/**
 * Releases the next message of each key among `finished` (rows without a key are passed
 * over), in the caller's transaction; returns how many became ready.
 */
export async function releaseNext(
  x: Executor,
  finished: readonly FinishedKey[],
  now: number,
): Promise<number> {
  const keyed = finished.filter((row) => row.ordering_key !== null);
  if (keyed.length === 0) return 0;
  const d = x.dialect;
  const { rows } = await x.query<{ n: unknown }>(releaseText(d), [
    keyed.map((row) => row.queue),
    keyed.map((row) => row.ordering_key),
    keyed.map((row) => Number(row.seq)),
    d.nowValue(now),
  ]);
  return Number(rows[0]?.n ?? 0);
}
