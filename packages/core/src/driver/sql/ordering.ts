/**
 * The statements of ordering keys (migration 0008, docs/ordering.md) both backends run
 * with the same words: a key's last message for enqueue, skip, and the blocked keys.
 * Releasing a key's next message is no statement here: SQLite's `messages_key_release`
 * trigger does it in the statement that finishes the key's head, whatever statement
 * wrote that state; on PostgreSQL the statements that finish messages do it themselves
 * (postgres/sql/release.ts).
 */
import type { MessageState } from '../../states.ts';
import type { Executor } from '../executor.ts';
import { params, statement, statementFor } from '../sql-text.ts';
import { bySelection, type DeadSelection, selectsNothing } from './dead-selection.ts';

/** A key's last message (highest `seq`): its position and state. */
export interface KeyTail {
  ordering_key: string;
  seq: number;
  state: MessageState;
}

/** Keys per tail statement (padded with repeats: one text for any batch). */
const TAIL_CHUNK = 100;

/**
 * For each key, the `seq` and state of its message with the highest `seq` (NULL for a
 * key that has none): two reads of the unique `messages_key (queue, ordering_key, seq)`
 * backwards from that key's last entry (`LIMIT 1`), one index probe each however long
 * the key's history. Scalar subqueries, so no planner can trade the probes for a scan:
 * a join of the keys to `messages` was planned, on a PostgreSQL table that grew faster
 * than its statistics, as a hash of every message at each batch of an ordered enqueue.
 */
const tailsText = statementFor('key-tails', (d, n) => {
  const last = (column: string) => `(SELECT x.${column} FROM ${d.table('messages')} x
        WHERE x.queue = ${d.param(n + 1)} AND x.ordering_key = k.name
        ORDER BY x.seq DESC LIMIT 1)`;
  return `
    WITH k(name) AS (VALUES ${Array.from({ length: n }, (_, i) => `(${d.param(i + 1)})`).join(', ')})
    SELECT k.name AS ordering_key, ${last('seq')} AS seq, ${last('state')} AS state FROM k`;
});

/** The last message of each of `keys` of `queue` that has any (a new key has no row). */
export async function keyTails(
  x: Executor,
  keys: readonly string[],
  queue: string,
): Promise<KeyTail[]> {
  const found = new Map<string, KeyTail>();
  const text = tailsText(x.dialect, TAIL_CHUNK);
  for (let i = 0; i < keys.length; i += TAIL_CHUNK) {
    const chunk = keys.slice(i, i + TAIL_CHUNK);
    while (chunk.length < TAIL_CHUNK) chunk.push(chunk[0] as string);
    const { rows } = await x.query<Omit<KeyTail, 'seq'> & { seq: unknown }>(text, [
      ...chunk,
      queue,
    ]);
    for (const row of rows) {
      if (row.seq === null) continue;
      found.set(row.ordering_key, { ...row, seq: Number(row.seq) });
    }
  }
  return [...found.values()];
}

/** A message `skip` moved: its id, and its key and position (null without a key). */
export interface SkippedRow {
  event_id: string;
  queue: string;
  ordering_key: string | null;
  seq: unknown;
}

/**
 * dead → skipped for the named dead messages (a pruned one included: skipping needs no
 * payload); returns the rows moved. Releasing each key's next message is the caller's
 * (SQLite: the `messages_key_release` trigger, in this statement; PostgreSQL: a
 * statement after it, in the same transaction).
 */
const skipText = statementFor(
  'skip',
  (d, n) => `UPDATE ${d.table('messages')} SET state = 'skipped', updated_at = ${d.now(1)}
WHERE state = 'dead' AND event_id IN (${params(d, 2, n)})
RETURNING event_id, queue, ordering_key, seq`,
);

export async function skipRows(
  x: Executor,
  ids: readonly string[],
  now: number,
): Promise<SkippedRow[]> {
  if (ids.length === 0) return [];
  const d = x.dialect;
  return (await x.query<SkippedRow>(skipText(d, ids.length), [d.nowValue(now), ...ids])).rows;
}

/** The ids of {@link skipRows}' rows, sorted. */
export function skippedIds(rows: readonly SkippedRow[]): string[] {
  return rows.map((r) => r.event_id).sort();
}

/** A key held by its dead head: the head, and how many messages wait behind it. */
export interface BlockedKeyRow {
  queue: string;
  ordering_key: string;
  event_id: string;
  updated_at: unknown;
  behind: unknown;
  last_error_code: string | null;
  last_error_detail: string | null;
}

/**
 * The keys whose head is dead, by key, at most ?1; with the messages behind each (every
 * later message of a blocked key is waiting: a key finishes in order).
 */
function blockedTextFor(ofQueue: boolean) {
  return statement(
    ofQueue ? 'blocked-keys-queue' : 'blocked-keys',
    (d) => `
    SELECT m.queue, m.ordering_key, m.event_id, m.updated_at, m.last_error_code, m.last_error_detail,
      (SELECT count(*) FROM ${d.table('messages')} w
        WHERE w.queue = m.queue AND w.ordering_key = m.ordering_key AND w.seq > m.seq) AS behind
    FROM ${d.table('messages')} m
    WHERE m.state = 'dead' AND m.ordering_key IS NOT NULL AND m.on_dead = 'block'${ofQueue ? ` AND m.queue = ${d.param(2)}` : ''}
    ORDER BY m.queue, m.ordering_key
    LIMIT ${d.limit(1)}`,
  );
}
const blockedTexts = { all: blockedTextFor(false), queue: blockedTextFor(true) };

/** The blocked keys (of `queue` when given), at most `limit`. */
export async function blockedKeys(
  x: Executor,
  limit: number,
  queue?: string,
): Promise<BlockedKeyRow[]> {
  const text = (queue === undefined ? blockedTexts.all : blockedTexts.queue)(x.dialect);
  return (await x.query<BlockedKeyRow>(text, queue === undefined ? [limit] : [limit, queue])).rows;
}

function blockedCountTextFor(ofQueue: boolean) {
  return statement(
    ofQueue ? 'blocked-key-count-queue' : 'blocked-key-count',
    (d) => `SELECT count(*) AS n FROM ${d.table('messages')}
    WHERE state = 'dead' AND ordering_key IS NOT NULL AND on_dead = 'block'${ofQueue ? ` AND queue = ${d.param(1)}` : ''}`,
  );
}
const blockedCountTexts = { all: blockedCountTextFor(false), queue: blockedCountTextFor(true) };

/** How many keys (of `queue` when given) are blocked. */
export async function countBlockedKeys(x: Executor, queue?: string): Promise<number> {
  const text = (queue === undefined ? blockedCountTexts.all : blockedCountTexts.queue)(x.dialect);
  const { rows } = await x.query<{ n: unknown }>(text, queue === undefined ? [] : [queue]);
  return Number(rows[0]?.n ?? 0);
}

/** A dead message that let its key go on without it (`on_dead = 'skip'`). */
export interface ReleasedDeadRow {
  event_id: string;
  queue: string;
  ordering_key: string;
}

/**
 * The dead, unpruned messages among `n` ids (or every one at 0) that released their key
 * when they died, by key and position: those a redrive puts back at their key's end.
 */
const releasedDeadText = bySelection(
  'released-dead',
  1,
  (d, term) => `SELECT event_id, queue, ordering_key FROM ${d.table('messages')}
WHERE state = 'dead' AND on_dead = 'skip' AND ordering_key IS NOT NULL AND pruned_at IS NULL${term === null ? '' : ` AND ${term}`}
ORDER BY queue, ordering_key, seq`,
);

export async function releasedDead(
  x: Executor,
  selection: DeadSelection,
): Promise<ReleasedDeadRow[]> {
  if (selectsNothing(selection)) return [];
  const { text, values } = releasedDeadText(x.dialect, selection);
  return (await x.query<ReleasedDeadRow>(text, values)).rows;
}

/**
 * Puts a dead message that released its key back into the key, for its redrive: at the
 * key's end (a new `seq` after the last, unless it is the last), holding the key again
 * (`on_dead = 'block'`). When another message of the key is unfinished (ready, leased,
 * waiting, or a dead one holding the key) it goes `waiting` behind them, attempts 0;
 * else it stays dead for the redrive to make it ready, the key's only head. ?1 now, ?2
 * the id. Returns the state it is left in.
 */
const rejoinText = statement('rejoin-key', (d) => {
  const m = d.table('messages');
  const sameKey = (t: string) => `${t}.queue = r.queue AND ${t}.ordering_key = r.ordering_key`;
  const unfinished = `EXISTS (SELECT 1 FROM ${m} o WHERE ${sameKey('o')}
        AND o.event_id <> r.event_id
        AND (o.state IN ('ready', 'leased', 'waiting') OR (o.state = 'dead' AND o.on_dead = 'block')))`;
  return `UPDATE ${m} AS r SET
  seq = CASE WHEN r.seq < (SELECT max(x.seq) FROM ${m} x WHERE ${sameKey('x')})
    THEN (SELECT max(x.seq) FROM ${m} x WHERE ${sameKey('x')}) + 1 ELSE r.seq END,
  on_dead = 'block',
  state = CASE WHEN ${unfinished} THEN 'waiting' ELSE 'dead' END,
  attempts = CASE WHEN ${unfinished} THEN 0 ELSE r.attempts END,
  available_at = CASE WHEN ${unfinished} THEN ${d.now(1)} ELSE r.available_at END,
  updated_at = ${d.now(1)}
WHERE r.event_id = ${d.param(2)} AND r.state = 'dead'
RETURNING state`;
});

export async function rejoinKey(
  x: Executor,
  eventId: string,
  now: number,
): Promise<'waiting' | 'dead'> {
  const d = x.dialect;
  const { rows } = await x.query<{ state: 'waiting' | 'dead' }>(rejoinText(d), [
    d.nowValue(now),
    eventId,
  ]);
  return rows[0]?.state ?? 'dead';
}
