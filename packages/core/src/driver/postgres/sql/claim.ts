/**
 * PostgreSQL's claim: its lazy recovery and the claim as one statement (`FOR UPDATE SKIP
 * LOCKED`, committing by itself). Its steps are also the result template's trailing
 * claim (complete.ts).
 */
import {
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../../machine.ts';
import type { ClaimedRow, ClaimInput } from '../../driver.ts';
import type { Executor } from '../../executor.ts';
import { type SqlDialect, statementFor } from '../../sql-text.ts';
import { COUNT_KIND, COUNT_KINDS } from './counts.ts';
import { RELEASE_COLUMNS, releasedMoves, releaseStep } from './release.ts';

/** A text as an SQL string literal (onceq's own constants: no quote to escape). */
export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * Claim with its lazy recovery in one statement, so a claim is one round trip run as its
 * own transaction, and keeps §5's order: a leased row whose lease ran out is claimable
 * in this very claim, as if recovery had run first.
 *
 * - `expired`: every leased row whose lease ran out (locked; others' locks skipped).
 *   They are read from the partial `messages_lease` (lease_until), the one index that
 *   holds leased rows (migration 0015), from its oldest lease: only the expired ones,
 *   never every live lease of every worker, whatever the statistics say.
 * - `ready`: the first `n` claimable ready rows of the queue by `(available_at,
 *   event_id)`, from the `messages_ready_queue` index.
 * - `pick`: the first `n` of both, an expired row ranking at its `lease_until` (the
 *   `available_at` recovery would give it) and only with attempts left under the
 *   `max_attempts` its claim stamped.
 * - `recovered`: expired rows not picked go back to ready, or to dead on the last
 *   attempt, exactly like SQLite's separate recovery statement.
 * - `claimed` leases the picked rows, stamping the claiming worker's `on_dead` and
 *   `max_attempts` (its recovery and `onceq doctor` go by them; never below the attempt
 *   the claim gives, which it did allow); a picked expired row also gets what recovery
 *   would have written (`available_at`, `last_error_*`). It finds them by primary key,
 *   `event_id = ANY(ARRAY(SELECT … FROM pick))`: joined with `FROM pick` instead, the
 *   planner hashed the whole table (a sequential scan of every message) to update one
 *   batch of rows.
 * - `released`: a recovered row that died under `on_dead = 'skip'` lets its ordering
 *   key's next message go (release.ts); nothing runs for rows without a key.
 * - `claim_counted` appends the status counters' deltas (migration 0006): picked ready
 *   rows ready → leased (an expired row picked stays leased), recovered rows leased →
 *   ready or dead, released ones waiting → ready. Every picked row is locked by this
 *   statement, so `claimed` updates each one.
 */
const claimText = statementFor(
  'claim-with-recovery',
  (d: SqlDialect, n: number) => `
    WITH ${claimSteps(d, n)}
    SELECT event_id, generation, attempts, lease_until, payload, available_at FROM claimed`,
);

/**
 * The steps of {@link claimText} (`$1` now, the lease's seconds at `$seconds`, max
 * attempts at `$max`, the queue at `$queue`, the `on_dead` stamped at `$onDead`), also
 * the trailing claim of the result template (complete.ts), which releases keys and
 * counts for the whole statement itself (`own` false: no `released` and no
 * `claim_counted` step here; the template counts {@link claimMoves} with its own moves).
 */
export function claimSteps(
  d: SqlDialect,
  n: number,
  seconds = 2,
  max = 3,
  queue = 4,
  onDead = 5,
  own = true,
): string {
  const messages = d.table('messages');
  const now = d.now(1);
  const code = literal(LEASE_EXPIRED);
  return `expired AS (
      SELECT event_id, lease_until AS rank_at, attempts, max_attempts FROM ${messages}
      WHERE state = 'leased' AND lease_until <= ${now} AND queue = $${queue}
      ORDER BY lease_until
      FOR UPDATE SKIP LOCKED
    ), ready AS (
      SELECT event_id, available_at AS rank_at FROM ${messages}
      WHERE state = 'ready' AND queue = $${queue} AND available_at <= ${now}
      ORDER BY available_at, event_id
      LIMIT ${n}
      FOR UPDATE SKIP LOCKED
    ), pick AS (
      SELECT event_id, from_ready FROM (
        SELECT event_id, rank_at, true AS from_ready FROM ready
        UNION ALL
        SELECT event_id, rank_at, false FROM expired WHERE attempts < max_attempts
      ) AS candidates
      ORDER BY rank_at, event_id
      LIMIT ${n}
    ), recovered AS (
      UPDATE ${messages} AS m SET
        state = CASE WHEN m.attempts < m.max_attempts THEN 'ready' ELSE 'dead' END,
        available_at = CASE WHEN m.attempts < m.max_attempts THEN m.lease_until ELSE m.available_at END,
        lease_until = NULL,
        last_error_code = ${code},
        last_error_detail = CASE WHEN m.attempts < m.max_attempts THEN ${literal(RECOVERED_DETAIL)} ELSE ${literal(RECOVERED_DEAD_DETAIL)} END,
        updated_at = ${now}
      FROM expired
      WHERE m.event_id = expired.event_id
        AND expired.event_id NOT IN (SELECT event_id FROM pick)
      RETURNING m.event_id, ${RELEASE_COLUMNS}
    ), claimed AS (
      UPDATE ${messages} AS m SET
        state = 'leased',
        attempts = m.attempts + 1,
        generation = m.generation + 1,
        lease_until = ${d.nowPlus(1, seconds)},
        updated_at = ${now},
        on_dead = $${onDead},
        max_attempts = GREATEST($${max}, m.attempts + 1),
        available_at = CASE WHEN m.state = 'leased' THEN m.lease_until ELSE m.available_at END,
        last_error_code = CASE WHEN m.state = 'leased' THEN ${code} ELSE m.last_error_code END,
        last_error_detail = CASE WHEN m.state = 'leased' THEN ${literal(RECOVERED_DETAIL)} ELSE m.last_error_detail END
      WHERE m.event_id = ANY(ARRAY(SELECT event_id FROM pick))
      RETURNING m.event_id, m.generation, m.attempts, m.lease_until, m.payload, m.available_at
    )${
      own
        ? `, ${releaseStep(d, ['recovered'])}, claim_counted AS (
      INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
      SELECT ${COUNT_KIND}, sum(n), 0 FROM (
        SELECT NULL::text AS queue, NULL::text AS key, 0::bigint AS n WHERE false${claimMoves(queue)}${releasedMoves}
      ) AS moves ${COUNT_KINDS}
      GROUP BY 1, 2 HAVING sum(n) <> 0
    )`
        : ''
    }`;
}

/**
 * The claim's moves for the status counters (migration 0006), as rows of `moves (queue,
 * key, n)` to append to a counting step's `UNION ALL`: picked ready rows ready → leased
 * (an expired row picked stays leased), recovered rows leased → ready or dead.
 */
export function claimMoves(queue: number): string {
  return `
        UNION ALL SELECT $${queue}::text, 'ready', -1 FROM pick WHERE from_ready
        UNION ALL SELECT $${queue}::text, 'leased', 1 FROM pick WHERE from_ready
        UNION ALL SELECT $${queue}::text, 'leased', -1 FROM recovered
        UNION ALL SELECT $${queue}::text, state, 1 FROM recovered`;
}

/** The claim with its recovery, on `x` (a transaction, or none: it commits by itself). */
export async function claimOn(x: Executor, input: ClaimInput): Promise<ClaimedRow[]> {
  const d = x.dialect;
  const { rows } = await x.query<ClaimedRow>(claimText(d, input.limit), [
    d.nowValue(input.now),
    input.leaseSeconds,
    input.maxAttempts,
    input.queue,
    input.onDead,
  ]);
  return inClaimOrder(rows);
}
