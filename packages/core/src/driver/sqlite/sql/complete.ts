/**
 * SQLite's result template: the batch in the caller's `BEGIN IMMEDIATE` transaction, one
 * row per execution of a cached prepared statement (a statement costs no round trip
 * here). Per result, in order: the fenced ACK (`ack`, the one text that moves `leased →
 * done`) and, only if it matched, each of its rows, or the fenced failure move. Then the
 * trailing claim. The status counters are the schema's triggers on SQLite.
 *
 * Not one multi-row INSERT per table: a statement that may abort halfway (constraints,
 * the counters trigger) keeps a statement journal of every page it changes, and past 64
 * KiB SQLite spills that journal to a temporary file, which then takes a `pwrite` for
 * every page every later statement of the transaction changes. A 100-row INSERT crossed
 * that line; a single row never does.
 */

import type { RowGroup } from '../../../handler/completion-rows.ts';
import type { FailureMove } from '../../../machine.ts';
import type { ResultTemplate } from '../../completion-write.ts';
import { type SqlText, sqlText } from '../../sql-text.ts';
import { type SqliteExecutor, sqliteExecutor } from '../executor.ts';
import { claimRows } from './claim.ts';

/**
 * leased → done for one `(event_id, generation)` still validly leased at now: the one
 * text on this backend that moves `leased → done`. ?1 now, ?2 the id, ?3 the generation.
 */
const ACK = sqlText(
  'ack',
  1,
  `UPDATE messages SET state = 'done', lease_until = NULL, updated_at = ?1
WHERE event_id = ?2 AND generation = ?3 AND state = 'leased' AND lease_until > ?1`,
);

/**
 * leased → ready or dead after a failure, fenced on the one lease: ?1 the state, ?2
 * available at, ?3 the code, ?4 the detail, ?5 now, ?6 the id, ?7 the generation.
 */
const FAIL = sqlText(
  'fail',
  1,
  `UPDATE messages SET
  state = ?1, available_at = ?2, lease_until = NULL,
  last_error_code = ?3, last_error_detail = ?4, updated_at = ?5
WHERE event_id = ?6 AND generation = ?7 AND state = 'leased' AND lease_until > ?5`,
);

/** The one-row INSERT of each table and column list, written once. */
const inserts = new Map<string, SqlText>();

/**
 * One row of `group`'s table: its columns, then the owner column and the stamp column
 * the write fills (onceq's own rows).
 */
function insertText(group: RowGroup): SqlText {
  const known = inserts.get(group.key);
  if (known !== undefined) return known;
  const columns = [...group.columns];
  if (group.owner !== null) columns.push(group.owner);
  if (group.stamp !== null) columns.push(group.stamp);
  const values = columns.map((_, i) => `?${i + 1}`);
  const text = sqlText(
    'insert-row',
    1,
    `INSERT INTO ${group.table} (${columns.join(', ')}) VALUES (${values.join(', ')})`,
  );
  if (inserts.size >= 100) inserts.clear();
  inserts.set(group.key, text);
  return text;
}

function insertRows(x: SqliteExecutor, group: RowGroup, owner: string, now: number): void {
  const text = insertText(group);
  for (const row of group.rows) {
    const values = [...row];
    if (group.owner !== null) values.push(owner);
    if (group.stamp !== null) values.push(now);
    x.run(text, values as never[]);
  }
}

export const sqliteTemplate: ResultTemplate = async (executor, writes, now, claim) => {
  const x = sqliteExecutor(executor);
  const written = new Map<string, FailureMove | null>();
  for (const write of writes) {
    const { lease } = write;
    if ('move' in write) {
      const { state, availableAt, code, detail } = write.move;
      const params = [state, availableAt, code, detail, now, lease.eventId, lease.generation];
      if (x.run(FAIL, params) === 1) written.set(lease.eventId, write.move);
      continue;
    }
    // The fenced ACK first: a lost lease then writes nothing at all (no row INSERT to
    // roll back, no duplicate key against a row another claim committed).
    if (x.run(ACK, [now, lease.eventId, lease.generation]) === 0) continue;
    for (const group of write.completion.rows) insertRows(x, group, lease.eventId, now);
    written.set(lease.eventId, null);
  }
  if (claim === undefined) return { written };
  return { written, claimed: claimRows(x, claim) };
};
