/**
 * PostgreSQL's result template (River's `JobSetStateIfRunningMany`): a whole batch of
 * results as ONE statement, taking one array per column. Its steps:
 *
 * - `input`: the arrays ($2 ids, $3 generations, $4 outcomes `done`/`ready`/`dead`, $5 a
 *   failure's backoff in seconds after now, $6 its code, $7 its detail; $1 now).
 * - `acked`: leased → done for every `done` pair still validly leased at now (the fenced
 *   ACK, the one text on this backend that moves `leased → done`).
 * - `failed`: leased → ready or dead for every failure pair still validly leased at now
 *   (only in the text of a batch that holds a failure).
 * - `rows_<i>`: one `INSERT … SELECT` per table and column list of the completions' rows
 *   (the money effect's `effects` row, onceq's `completions` record, a handler's own
 *   rows), each row joined to the ACK of its own message: a lost lease inserts nothing.
 * - optionally the claim's steps (sql/claim.ts): the next messages claimed in the same
 *   statement. No row is written by both halves: the ACK and the failure take a row only
 *   while its lease holds at now (`lease_until > now`), the claim's recovery only once it
 *   ran out (`lease_until <= now`), the same reading; every step sees the statement's one
 *   snapshot, so a row the failure makes ready is claimed by a later claim.
 * - `released`: the next message of every ordering key the statement finished (ACKed,
 *   died under `on_dead = 'skip'`, in `failed` or the claim's recovery) goes `waiting` →
 *   `ready`, in one call for all of them (release.ts); a later claim hands it out. While
 *   the trailing claim has room (it took every message its snapshot showed), the release
 *   leases them to it instead, in claim order, as a claim after the release would have
 *   (migration 0020): they come back with the claim's rows.
 * - `counted`: the status counters' deltas (migration 0006) of `acked`, `failed`, the claim,
 *   `released` and the `effects` rows.
 *
 * Returns one row per message whose fence matched (`done` or `failed`) and one per row
 * claimed (`claimed`). PostgreSQL runs it all or nothing: a row the database refuses
 * leaves none of it.
 */
import type { RowGroup } from '../../../handler/completion-rows.ts';
import { type FailureMove, inClaimOrder } from '../../../machine.ts';
import type { ResultTemplate, TemplateWrite } from '../../completion-write.ts';
import type { ClaimedRow } from '../../driver.ts';
import { type SqlDialect, type SqlText, sqlText } from '../../sql-text.ts';
import {
  collect,
  insertSql,
  isEffects,
  parameterCount,
  parameters,
  type Rows,
} from '../completion-rows.ts';
import { claimMoves, claimSteps } from './claim.ts';
import { COUNT_KIND, COUNT_KINDS } from './counts.ts';
import { RELEASE_COLUMNS, releasedClaims, releasedMoves, releaseStep } from './release.ts';

/** The placeholders before the rows' parameters, without and with a trailing claim. */
const RESULT_PARAMETERS = 7;
const CLAIM_PARAMETERS = 4;
/** Where the trailing claim's placeholders stand, right after the results'. */
const CLAIM_AT = { seconds: 8, max: 9, queue: 10, onDead: 11 } as const;

/**
 * The fence every move out of `leased` of the template takes: the row named by the input
 * pair, by primary key from the array `ids` (joined on `input` alone, a small table is
 * scanned whole and hashed), leased at the pair's generation with time left at now. The
 * ACK looks up every id of the batch (failures are few), the failure step only its own.
 */
function fence(d: SqlDialect, ids: string): string {
  return `m.event_id = ANY(${ids})
        AND m.event_id = input.event_id
        AND m.generation = input.generation
        AND ${d.liveLease(1, 'm.')}`;
}

/** The template's text for a list of tables and column lists, and a claim of `claim` rows. */
function write(
  d: SqlDialect,
  tables: readonly Rows[],
  claim: number | null,
  failures: boolean,
): string {
  const messages = d.table('messages');
  const now = d.now(1);
  const first = RESULT_PARAMETERS + (claim === null ? 0 : CLAIM_PARAMETERS) + 1;
  let effects = '';
  let position = first;
  const inserts = tables.map((rows, i) => {
    const counted = isEffects(rows.group);
    if (counted) {
      effects += `
        UNION ALL SELECT 'effect', category, count(*), sum(amount_cents) FROM rows_${i}
        GROUP BY category`;
    }
    const returning = counted ? 'category, amount_cents' : '';
    const step = `, rows_${i} AS (${insertSql(rows, d, position, returning)})`;
    position += parameterCount(rows);
    return step;
  });
  const claimed =
    claim === null
      ? ''
      : `, ${claimSteps(d, claim, CLAIM_AT.seconds, CLAIM_AT.max, CLAIM_AT.queue, CLAIM_AT.onDead, false)}`;
  // One release for every key the statement finished: its ACKs, its failures and its
  // claim's recovery (each key's lock taken once, in sorted order).
  const released = [
    'acked',
    ...(failures ? ['failed'] : []),
    ...(claim === null ? [] : ['recovered']),
  ];
  const claimRows =
    claim === null
      ? ''
      : `
    UNION ALL SELECT 'claimed', event_id, generation, attempts, lease_until, payload, available_at
    FROM claimed${releasedClaims}`;
  // The messages released go to the claim while it has room: as if released before it.
  const leaseTo =
    claim === null
      ? null
      : {
          room: `${claim} - (SELECT count(*) FROM claimed)`,
          queue: CLAIM_AT.queue,
          seconds: CLAIM_AT.seconds,
          max: CLAIM_AT.max,
          onDead: CLAIM_AT.onDead,
        };
  // The ACK keeps its pairs by `outcome NOT IN ('ready', 'dead')`, not `outcome = 'done'`:
  // the planner has no statistics on `input` and reads an equality as keeping one pair in
  // two hundred, so it planned a batch of 500 ACKs as one or two lookups, each a walk of
  // a whole secondary index that merely holds `event_id`; the inequalities read as
  // keeping nearly all, and the plan joins the batch by primary key or hash.
  return `
    WITH input AS (
      SELECT * FROM unnest($2::text[], $3::integer[], $4::text[], $5::bigint[], $6::text[], $7::text[])
        AS t(event_id, generation, outcome, delay, code, detail)
    ), acked AS (
      UPDATE ${messages} AS m
      SET state = 'done', lease_until = NULL, updated_at = ${now}
      FROM input
      WHERE input.outcome NOT IN ('ready', 'dead')
        AND ${fence(d, '$2::text[]')}
      RETURNING m.event_id, ${RELEASE_COLUMNS}
    )${failures ? failedStep(d) : ''}${inserts.join('')}${claimed}, ${releaseStep(d, released, leaseTo)}, counted AS (
      INSERT INTO ${d.table('onceq_counts')} (kind, key, n, total)
      SELECT ${COUNT_KIND}, sum(n), 0 FROM (
        SELECT queue, 'leased' AS key, -1 AS n FROM acked
        UNION ALL SELECT queue, 'done', 1 FROM acked${
          failures
            ? `
        UNION ALL SELECT queue, 'leased', -1 FROM failed
        UNION ALL SELECT queue, state, 1 FROM failed`
            : ''
        }${claim === null ? '' : claimMoves(CLAIM_AT.queue)}${releasedMoves}
      ) AS moves ${COUNT_KINDS}
      GROUP BY 1, 2 HAVING sum(n) <> 0${effects}
    )
    SELECT 'done' AS outcome, event_id, NULL::integer AS generation, NULL::integer AS attempts,
      NULL::bigint AS lease_until, NULL::text AS payload, NULL::bigint AS available_at
    FROM acked${
      failures
        ? `
    UNION ALL SELECT 'failed', event_id, NULL, NULL, NULL, NULL, NULL FROM failed`
        : ''
    }${claimRows}`;
}

/** The failure step, only in a text for a batch that holds a failure. */
function failedStep(d: SqlDialect): string {
  const now = d.now(1);
  return `, failed AS (
      UPDATE ${d.table('messages')} AS m SET
        state = input.outcome, available_at = ${now} + input.delay, lease_until = NULL,
        last_error_code = input.code, last_error_detail = input.detail, updated_at = ${now}
      FROM input
      WHERE input.outcome <> 'done'
        AND ${fence(d, "ARRAY(SELECT event_id FROM input WHERE outcome <> 'done')")}
      RETURNING m.event_id, ${RELEASE_COLUMNS}
    )`;
}

/** The texts already written, by dialect, tables and claim (a handler names few tables). */
const texts = new Map<string, SqlText>();

function textFor(
  d: SqlDialect,
  tables: readonly Rows[],
  claim: number | null,
  failures: boolean,
): SqlText {
  const key = `${d.key} ${claim ?? '-'} ${failures} ${tables.map((rows) => rows.group.key).join(' ')}`;
  const known = texts.get(key);
  if (known !== undefined) return known;
  const text = sqlText('complete', claim ?? 0, write(d, tables, claim, failures));
  if (texts.size >= 200) texts.clear();
  texts.set(key, text);
  return text;
}

type TemplateRow = Omit<ClaimedRow, 'event_id'> & {
  outcome: 'done' | 'failed' | 'claimed';
  event_id: string;
};

/** The template run on `x`: one statement for the batch and its claim. */
export const postgresTemplate: ResultTemplate = async (x, writes, now, claim) => {
  const d = x.dialect;
  const n = writes.length;
  const ids = new Array<string>(n);
  const generations = new Array<number>(n);
  const outcomes = new Array<string>(n);
  const delays = new Array<number | null>(n);
  const codes = new Array<string | null>(n);
  const details = new Array<string | null>(n);
  const moves = new Map<string, FailureMove>();
  const byTable = new Map<string, Rows>();
  for (let i = 0; i < n; i++) {
    const write = writes[i] as TemplateWrite;
    const { lease } = write;
    ids[i] = lease.eventId;
    generations[i] = lease.generation;
    if ('move' in write) {
      const { move } = write;
      outcomes[i] = move.state;
      delays[i] = move.availableAt - now;
      codes[i] = move.code;
      details[i] = move.detail;
      moves.set(lease.eventId, move);
    } else {
      outcomes[i] = 'done';
      delays[i] = null;
      codes[i] = null;
      details[i] = null;
      collect(byTable, lease.eventId, write.completion.rows as readonly RowGroup[]);
    }
  }
  const tables = [...byTable.values()];
  const values: unknown[] = [d.nowValue(now), ids, generations, outcomes, delays, codes, details];
  if (claim !== undefined)
    values.push(claim.leaseSeconds, claim.maxAttempts, claim.queue, claim.onDead);
  for (const rows of tables) values.push(...parameters(rows));
  const text = textFor(d, tables, claim === undefined ? null : claim.limit, moves.size > 0);
  const { rows } = await x.query<TemplateRow>(text, values);
  const written = new Map<string, FailureMove | null>();
  const claimed: ClaimedRow[] = [];
  for (const row of rows) {
    if (row.outcome === 'done') written.set(row.event_id, null);
    else if (row.outcome === 'failed')
      written.set(row.event_id, moves.get(row.event_id) as FailureMove);
    else {
      const { event_id, generation, attempts, lease_until, payload, available_at } = row;
      claimed.push({ event_id, generation, attempts, lease_until, payload, available_at });
    }
  }
  return claim === undefined ? { written } : { written, claimed: inClaimOrder(claimed) };
};
