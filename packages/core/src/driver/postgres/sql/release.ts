/**
 * PostgreSQL's release of ordering keys (docs/ordering.md, migrations 0013 and 0020):
 * when a statement finishes keyed messages (`done`, `skipped`, or `dead` under `on_dead =
 * 'skip'`), the same statement makes each key's next message `waiting` → `ready`, or
 * `leased` to its own claim while that claim has room, with one call of
 * `onceq_release_next` for all of them.
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
import { letsKeyGo } from '../../sql/ordering.ts';
import { type SqlDialect, statement } from '../../sql-text.ts';
import { COUNT_KIND, COUNT_KINDS } from './counts.ts';

/**
 * The columns a source step of {@link releaseStep} returns for each message it moved:
 * the message's key and position, and what decides whether it released its key.
 */
export const RELEASE_COLUMNS = 'm.queue, m.ordering_key, m.seq, m.state, m.on_dead';

/**
 * The claim of the statement that calls the release, if it has one: the messages the
 * release frees may go straight to it (migration 0020). `room` is an SQL expression,
 * the rows the claim asked for less those it got; the others are its placeholders.
 */
export interface ReleaseClaim {
  room: string;
  queue: number;
  seconds: number;
  max: number;
  onDead: number;
}

/**
 * `released`: the next messages of the keys the `sources` steps finished (each returning
 * {@link RELEASE_COLUMNS}), leased to the statement's `claim` while it has room, the
 * others made ready, with `now` from placeholder 1. Its rows are the function's: one
 * `leased` row per message leased (what a claim returns), one `ready` row per queue
 * with the count made ready. A statement that finishes no keyed message never calls the
 * function (no row to aggregate), so messages without a key pay nothing for it. The step
 * is read by the statement's counting step ({@link releasedMoves}): a step nothing reads
 * never runs.
 */
export function releaseStep(
  d: SqlDialect,
  sources: readonly string[],
  claim: ReleaseClaim | null = null,
): string {
  const finished = sources
    .map(
      (source) => `SELECT queue, ordering_key, seq FROM ${source}
        WHERE ordering_key IS NOT NULL AND ${letsKeyGo('')}`,
    )
    .join('\n        UNION ALL ');
  const leaseTo =
    claim === null
      ? 'NULL::text, 0, NULL::bigint, NULL::integer, NULL::text'
      : `$${claim.queue}::text, (${claim.room})::integer, $${claim.seconds}::bigint, $${claim.max}::integer, $${claim.onDead}::text`;
  return `released AS (
      SELECT r.kind, r.released_queue AS queue, r.n, r.event_id, r.generation, r.attempts,
        r.lease_until, r.payload, r.available_at
      FROM (
        SELECT array_agg(queue) AS queues, array_agg(ordering_key) AS keys, array_agg(seq) AS seqs
        FROM (${finished}) AS finished
        HAVING count(*) > 0
      ) AS finished_keys
      CROSS JOIN LATERAL ${d.schema}.onceq_release_next(
        finished_keys.queues, finished_keys.keys, finished_keys.seqs, ${d.now(1)},
        ${leaseTo}) AS r
    )`;
}

/**
 * The counters' rows of {@link releaseStep}'s moves, by queue, for a `(queue, key, n)`
 * union of moves (counts.ts's `COUNT_KINDS` counts each for the store and its queue):
 * every message released leaves `waiting` for `ready` or `leased`.
 */
export const releasedMoves = `
        UNION ALL SELECT queue, 'waiting', -n FROM released
        UNION ALL SELECT queue, kind, n FROM released`;

/** The rows {@link releaseStep} leased, as the result template returns its claim's. */
export const releasedClaims = `
    UNION ALL SELECT 'claimed', event_id, generation, attempts, lease_until, payload, available_at
    FROM released WHERE kind = 'leased'`;

/**
 * The function on its own, for a write that finishes messages in a statement of its own
 * (`skip`): it releases, and counts what it released, in one statement.
 */
const releaseText = statement(
  'release-next',
  (d) => `
    WITH released AS (
      SELECT r.kind, r.released_queue AS queue, r.n
      FROM ${d.schema}.onceq_release_next($1::text[], $2::text[], $3::bigint[], ${d.now(4)},
        NULL::text, 0, NULL::bigint, NULL::integer, NULL::text) AS r
    )
    INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
    SELECT ${COUNT_KIND}, sum(n), 0 FROM (
      SELECT NULL::text AS queue, NULL::text AS key, 0::bigint AS n WHERE false${releasedMoves}
    ) AS moves ${COUNT_KINDS}
    GROUP BY 1, 2 HAVING sum(n) <> 0`,
);

/** A message that finished: its key and position. */
export interface FinishedKey {
  queue: string;
  ordering_key: string | null;
  seq: unknown;
}

/**
 * Releases the next message of each key among `finished` (rows without a key are passed
 * over), in the caller's transaction, and counts the messages it made ready.
 */
export async function releaseNext(
  x: Executor,
  finished: readonly FinishedKey[],
  now: number,
): Promise<void> {
  const keyed = finished.filter((row) => row.ordering_key !== null);
  if (keyed.length === 0) return;
  const d = x.dialect;
  await x.query(releaseText(d), [
    keyed.map((row) => row.queue),
    keyed.map((row) => row.ordering_key),
    keyed.map((row) => Number(row.seq)),
    d.nowValue(now),
  ]);
}
