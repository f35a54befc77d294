/**
 * The statements of ordering keys (migration 0008, docs/ordering.md) both backends run
 * with the same words: a key's positions (`keyPositions`: PostgreSQL's `message_keys`,
 * migration 0019; SQLite's `messages`) for enqueue, a rejoin and the blocked keys, and
 * skip. Releasing a key's next message is no statement here: SQLite's
 * `messages_key_release` trigger does it in the statement that finishes the key's head,
 * whatever statement wrote that state; on PostgreSQL the statements that finish messages
 * do it themselves (postgres/sql/release.ts).
 */
import type { Executor } from '../executor.ts';
import { keyPositions, params, statement, statementFor } from '../sql-text.ts';
import { bySelection, type DeadSelection, selectsNothing } from './dead-selection.ts';

/**
 * A key's last message (highest `seq`): its position, and whether the key has nothing
 * unfinished (null when that message's row is gone while its position stayed).
 */
export interface KeyTail {
  ordering_key: string;
  seq: number;
  finished: boolean | null;
}

/**
 * Whether a message of a key has let its key go (`p`: the table's alias and a dot, or
 * ''): done or skipped, or dead under `on_dead = 'skip'` (it let its key go when it
 * died). SQLite's release trigger (`RELEASE_WHEN` of migrations 0010 and 0014) states
 * the same rule.
 */
export const letsKeyGo = (p: string): string =>
  `(${p}state IN ('done', 'skipped') OR (${p}state = 'dead' AND ${p}on_dead = 'skip'))`;

/** Keys per tail statement (padded with repeats: one text for any batch). */
const TAIL_CHUNK = 100;

/**
 * For each key, the `seq` and event id of its last position (NULL for a key that has
 * none): two reads backwards from that key's last position (`LIMIT 1`),
 * one probe each however long the key's history; then whether that message is finished
 * (done or skipped, or dead under `on_dead = 'skip'`: it let its key go when it died),
 * by primary key. Scalar subqueries, so no planner can trade the probes for a scan: a
 * join of the keys to `messages` was planned, on a PostgreSQL table that grew faster
 * than its statistics, as a hash of every message at each batch of an ordered enqueue.
 */
const tailsText = statementFor('key-tails', (d, n) => {
  const last = (column: string) => `(SELECT x.${column} FROM ${keyPositions(d)} x
        WHERE x.queue = ${d.param(n + 1)} AND x.ordering_key = k.name
        ORDER BY x.seq DESC LIMIT 1)`;
  return `
    WITH k(name) AS (VALUES ${Array.from({ length: n }, (_, i) => `(${d.param(i + 1)})`).join(', ')}),
    tail AS (SELECT k.name, ${last('seq')} AS seq, ${last('event_id')} AS event_id FROM k)
    SELECT tail.name AS ordering_key, tail.seq,
      (SELECT CASE WHEN ${letsKeyGo('m.')} THEN 1 ELSE 0 END
        FROM ${d.table('messages')} m WHERE m.event_id = tail.event_id) AS finished
    FROM tail`;
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
    const { rows } = await x.query<{ ordering_key: string; seq: unknown; finished: unknown }>(
      text,
      [...chunk, queue],
    );
    for (const row of rows) {
      if (row.seq === null) continue;
      const finished = row.finished === null ? null : Number(row.finished) === 1;
      found.set(row.ordering_key, {
        ordering_key: row.ordering_key,
        seq: Number(row.seq),
        finished,
      });
    }
  }
  return [...found.values()];
}

/** A new keyed message's position: its key, `seq` and event id. */
export interface KeyPosition {
  ordering_key: string;
  seq: number;
  event_id: string;
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
 * The keys whose head is dead, by key, at most ?1; with the messages behind each, counted
 * on the key's positions (every later message of a blocked key is waiting: a key
 * finishes in order).
 */
function blockedTextFor(ofQueue: boolean) {
  return statement(
    ofQueue ? 'blocked-keys-queue' : 'blocked-keys',
    (d) => `
    SELECT m.queue, m.ordering_key, m.event_id, m.updated_at, m.last_error_code, m.last_error_detail,
      (SELECT count(*) FROM ${keyPositions(d)} w
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

/** A dead message's key and position, for its rejoin. */
const rejoiningText = statement(
  'rejoin-read',
  (d) => `SELECT queue, ordering_key, seq FROM ${d.table('messages')}
WHERE event_id = ${d.param(1)} AND state = 'dead' AND ordering_key IS NOT NULL`,
);

/** A key's last position (queue ?1, key ?2). */
const lastPositionText = statement(
  'key-last-position',
  (d) => `SELECT max(seq) AS seq FROM ${keyPositions(d)}
WHERE queue = ${d.param(1)} AND ordering_key = ${d.param(2)}`,
);

/** Moves a position (queue ?1, key ?2, from `seq` ?3 to ?4). */
const movePositionText = statement(
  'key-position-move',
  (d) => `UPDATE ${keyPositions(d)} SET seq = ${d.param(4)}
WHERE queue = ${d.param(1)} AND ordering_key = ${d.param(2)} AND seq = ${d.param(3)}`,
);

/**
 * The rejoin's write of the message ?2 (now ?1, its new position ?3): it holds its key
 * again (`on_dead = 'block'`) and goes `waiting`, attempts 0, when another message of
 * the key is unfinished (ready, leased, waiting, or a dead one holding the key), else
 * stays dead for the redrive to make it ready, the key's only head. A key's unfinished
 * messages are the last of its positions (a key finishes in order; a message that
 * released its key dead rejoins at the end), so the message just before the rejoining
 * one, now last, says whether any is.
 */
const rejoinText = statement('rejoin-key', (d) => {
  const m = d.table('messages');
  const before = `(SELECT k.event_id FROM ${keyPositions(d)} k
        WHERE k.queue = r.queue AND k.ordering_key = r.ordering_key AND k.event_id <> r.event_id
        ORDER BY k.seq DESC LIMIT 1)`;
  const unfinished = `EXISTS (SELECT 1 FROM ${m} o WHERE o.event_id = ${before}
        AND (o.state IN ('ready', 'leased', 'waiting') OR (o.state = 'dead' AND o.on_dead = 'block')))`;
  return `UPDATE ${m} AS r SET
  seq = ${d.param(3)},
  on_dead = 'block',
  state = CASE WHEN ${unfinished} THEN 'waiting' ELSE 'dead' END,
  attempts = CASE WHEN ${unfinished} THEN 0 ELSE r.attempts END,
  available_at = CASE WHEN ${unfinished} THEN ${d.now(1)} ELSE r.available_at END,
  updated_at = ${d.now(1)}
WHERE r.event_id = ${d.param(2)} AND r.state = 'dead'
RETURNING state`;
});

/**
 * Puts a dead message that released its key back into the key, for its redrive: at the
 * key's end (a position after the last, unless it is the last), holding the key again;
 * `waiting` behind the key's unfinished messages, or left dead for the redrive to make it
 * ready when there are none. Returns the state it is left in.
 */
export async function rejoinKey(
  x: Executor,
  eventId: string,
  now: number,
): Promise<'waiting' | 'dead'> {
  const d = x.dialect;
  const [row] = (
    await x.query<{ queue: string; ordering_key: string; seq: unknown }>(rejoiningText(d), [
      eventId,
    ])
  ).rows;
  if (row === undefined) return 'dead';
  const { queue, ordering_key: key } = row;
  const from = Number(row.seq);
  const last = Number(
    (await x.query<{ seq: unknown }>(lastPositionText(d), [queue, key])).rows[0]?.seq ?? from,
  );
  const to = from < last ? last + 1 : from;
  // Apart (PostgreSQL), the position moves on its own; else the message's `seq` is it.
  if (to !== from && d.positionsApart) await x.query(movePositionText(d), [queue, key, from, to]);
  const { rows } = await x.query<{ state: 'waiting' | 'dead' }>(rejoinText(d), [
    d.nowValue(now),
    eventId,
    to,
  ]);
  return rows[0]?.state ?? 'dead';
}
