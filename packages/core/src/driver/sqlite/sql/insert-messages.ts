import { DEFAULT_QUEUE } from '../../../queues.ts';
import type { EnqueueDelay, NewMessage } from '../../driver.ts';
import type { Executor } from '../../executor.ts';
import { statement, statementFor } from '../../sql-text.ts';

/**
 * Rows per INSERT: the largest chunk; a remainder goes in power-of-two chunks (a few
 * texts for any batch). A full 1000-line batch is two statements; a row binds two values
 * (its id and payload; the rest are literals and the one shared now), so 500 rows are
 * 1001 parameters, far below SQLite's limit.
 */
const INSERT_CHUNK = 500;

/**
 * The multi-row INSERT of `n` new messages: ?1 now, ?2 when they become claimable, then
 * each row's id and payload, and last their queue.
 * `ON CONFLICT (event_id) DO NOTHING`: an id already stored is skipped, not an error, and
 * the statement's change count says how many rows were new, so enqueue reads stored
 * rows only when some were skipped. Only the `event_id` key is named: a failed CHECK
 * still aborts the statement.
 */
const insertText = statementFor('enqueue-insert', (_, n) => {
  const rows = new Array<string>(n);
  const queue = 2 * n + 3;
  for (let i = 0; i < n; i++) {
    rows[i] = `(?${2 * i + 3}, ?${2 * i + 4}, 'ready', 0, 0, ?2, NULL, ?1, ?1, ?${queue})`;
  }
  return `INSERT INTO messages
  (event_id, payload, state, attempts, generation, available_at, lease_until, enqueued_at, updated_at, queue)
VALUES ${rows.join(', ')}
ON CONFLICT (event_id) DO NOTHING`;
});

/**
 * {@link insertText} for messages with ordering keys: each row also binds its key, its
 * `seq` and its state (`ready` for its key's head, else `waiting`).
 */
const insertKeyedText = statementFor('enqueue-insert-keyed', (_, n) => {
  const rows = new Array<string>(n);
  const queue = 5 * n + 3;
  for (let i = 0; i < n; i++) {
    const p = 5 * i + 3;
    rows[i] =
      `(?${p}, ?${p + 1}, ?${p + 2}, 0, 0, ?2, NULL, ?1, ?1, ?${p + 3}, ?${p + 4}, ?${queue})`;
  }
  return `INSERT INTO messages
  (event_id, payload, state, attempts, generation, available_at, lease_until, enqueued_at, updated_at,
   ordering_key, seq, queue)
VALUES ${rows.join(', ')}
ON CONFLICT (event_id) DO NOTHING`;
});

/**
 * The last rowid before a batch's inserts: every row the batch inserts gets a larger one
 * (SQLite gives a new row the largest rowid plus one, and the write lock keeps other
 * writers out meanwhile).
 */
const lastRowidText = statement(
  'enqueue-last-rowid',
  () => 'SELECT coalesce(max(rowid), 0) AS last FROM messages',
);

/**
 * The `storage` counter (migration 0017) gains the payloads of the rows inserted after
 * rowid ?1: one statement per batch instead of a row trigger's statement per row.
 */
const countInsertedText = statement(
  'enqueue-count-payloads',
  () => `UPDATE onceq_counts SET n = onceq_counts.n + inserted.n, total = onceq_counts.total + inserted.bytes
FROM (SELECT count(*) AS n, coalesce(sum(octet_length(payload)), 0) AS bytes
      FROM messages WHERE rowid > ?1 AND payload IS NOT NULL) AS inserted
WHERE kind = 'storage' AND key = 'payload'`,
);

const NO_DELAY: EnqueueDelay = Object.freeze({ seconds: 0, at: 0 });

/** The next insert's row count: the full chunk, else the largest power of two that fits. */
function insertSize(remaining: number): number {
  if (remaining >= INSERT_CHUNK) return INSERT_CHUNK;
  return 2 ** Math.floor(Math.log2(remaining));
}

/**
 * New `ready` messages at `now` in multi-row INSERTs of a few fixed sizes; ids already
 * stored are skipped. Returns the rows inserted. On `x` as given: the store's own
 * transaction, or a caller's.
 */
export async function insertMessages(
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  delay: EnqueueDelay = NO_DELAY,
  queue: string = DEFAULT_QUEUE,
): Promise<number> {
  const availableAt = Math.max(now + delay.seconds, delay.at);
  const last = (await x.query<{ last: number }>(lastRowidText(x.dialect))).rows[0]?.last ?? 0;
  const inserted = rows.some((row) => row.ordering !== undefined)
    ? await insertKeyed(x, rows, now, availableAt, queue)
    : await insertPlain(x, rows, now, availableAt, queue);
  if (inserted > 0) await x.query(countInsertedText(x.dialect), [last]);
  return inserted;
}

/** {@link insertMessages} of a batch without ordering keys. */
async function insertPlain(
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  availableAt: number,
  queue: string,
) {
  let inserted = 0;
  for (let i = 0; i < rows.length; ) {
    const size = insertSize(rows.length - i);
    const values = new Array<unknown>(2 * size + 3);
    values[0] = now;
    values[1] = availableAt;
    values[2 * size + 2] = queue;
    for (let k = 0; k < size; k++) {
      const row = rows[i + k] as { eventId: string; payload: string };
      values[2 * k + 2] = row.eventId;
      values[2 * k + 3] = row.payload;
    }
    inserted += (await x.query(insertText(x.dialect, size), values)).changes;
    i += size;
  }
  return inserted;
}

/** {@link insertMessages} of a batch holding keyed messages (unkeyed rows bind nulls). */
async function insertKeyed(
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  availableAt: number,
  queue: string,
) {
  let inserted = 0;
  for (let i = 0; i < rows.length; ) {
    const size = insertSize(rows.length - i);
    const values = new Array<unknown>(5 * size + 3);
    values[0] = now;
    values[1] = availableAt;
    values[5 * size + 2] = queue;
    for (let k = 0; k < size; k++) {
      const row = rows[i + k] as NewMessage;
      values[5 * k + 2] = row.eventId;
      values[5 * k + 3] = row.payload;
      values[5 * k + 4] = row.ordering?.state ?? 'ready';
      values[5 * k + 5] = row.ordering?.name ?? null;
      values[5 * k + 6] = row.ordering?.seq ?? null;
    }
    inserted += (await x.query(insertKeyedText(x.dialect, size), values)).changes;
    i += size;
  }
  return inserted;
}
