/**
 * A completion's `insert` rows on PostgreSQL, as JSON: each table (and column list) of a
 * batch is one parameter holding every row as `[owner event id, {column: value}]`, and
 * the server turns each value into its column's type with `json_populate_record` on the
 * table's own row type, so no column type has to be known here. A value reaches its
 * column as the text PostgreSQL would get for it as a bound parameter (a string's
 * contents, a number's digits, a plain array's or object's JSON text), except that a
 * `json`/`jsonb` column keeps a JSON value as the value it is (a string stays a string).
 *
 * The same statement shape serves both paths: {@link fusedCompletions} (the fenced ACK,
 * onceq's records and every row as ONE statement committing by itself, each row joined to
 * the ACK of its own message) and {@link insertRows} (the rows of messages already ACKed,
 * inside the ACK's transaction).
 */
import { OnceqError } from '../../errors.ts';
import type { RowGroup } from '../../handler/completion-rows.ts';
import type { FailureMove } from '../../machine.ts';
import { crashPoint } from '../../testing/crash-points.ts';
import type { Store } from '../backend.ts';
import type { UserWrite } from '../completion-write.ts';
import type { Executor } from '../executor.ts';
import { type SqlDialect, type SqlText, sqlText } from '../sql-text.ts';
import { ackCounts, ackInput } from './statements.ts';

/** The rows of one table and column list, of any number of messages, with their owners. */
interface Rows {
  readonly group: RowGroup;
  readonly owners: string[];
  readonly values: (readonly unknown[])[];
  /** Per row, which values are JSON text (see {@link RowGroup.json}). */
  readonly json: (readonly boolean[] | null)[];
  /** Whether a row holds a value `JSON.stringify` would not write as PostgreSQL gets it. */
  special: boolean;
}

/** Adds the rows of `groups` (one message's, owned by `owner`) to `byTable`. */
function collect(byTable: Map<string, Rows>, owner: string, groups: readonly RowGroup[]): void {
  for (const group of groups) {
    let rows = byTable.get(group.key);
    if (rows === undefined) {
      rows = { group, owners: [], values: [], json: [], special: false };
      byTable.set(group.key, rows);
    }
    for (let r = 0; r < group.rows.length; r++) {
      const values = group.rows[r] as readonly unknown[];
      const json = group.json[r] ?? null;
      rows.owners.push(owner);
      rows.values.push(values);
      rows.json.push(json);
      if (!rows.special && (json !== null || values.some(isBigint))) rows.special = true;
    }
  }
}

function isBigint(value: unknown): boolean {
  return typeof value === 'bigint';
}

/**
 * The rows as one JSON array of `[owner, {column: value}]`: every value as the JSON value
 * whose text PostgreSQL gets for it as a parameter (a string's contents, a number's
 * lexeme, a bigint's digits, a plain array's or object's JSON text).
 */
function parameter(rows: Rows): string {
  const names = rows.group.columns.map((quoted) => quoted.slice(1, -1));
  // (A column named __proto__ would set an object literal's prototype, not a key.)
  if (!rows.special && !names.includes('__proto__')) {
    // Strings, finite numbers, booleans and null only: JSON.stringify writes each as is.
    const pairs = rows.values.map((values, r) => {
      const row: Record<string, unknown> = {};
      for (let c = 0; c < names.length; c++) row[names[c] as string] = values[c];
      return [rows.owners[r], row];
    });
    return JSON.stringify(pairs);
  }
  // A bigint, or a plain array's or object's JSON text: written value by value.
  const { columns } = rows.group;
  const elements = rows.values.map((values, r) => {
    const json = rows.json[r];
    const cells = columns.map(
      (column, c) => `${column}:${jsonValue(values[c], json?.[c] === true)}`,
    );
    return `[${JSON.stringify(rows.owners[r])},{${cells.join(',')}}]`;
  });
  return `[${elements.join(',')}]`;
}

/** `value` as a JSON value whose text is what PostgreSQL gets for it as a parameter. */
function jsonValue(value: unknown, isJson: boolean): string {
  switch (typeof value) {
    case 'string':
      return isJson ? value : JSON.stringify(value);
    case 'number':
    case 'bigint':
    case 'boolean':
      // A finite number's String is a JSON number lexeme (`1e+21`), kept as written.
      return String(value);
    default:
      return 'null';
  }
}

/**
 * `INSERT … SELECT` of the rows in parameter `$position`, in the order given; with
 * `ackedOnly`, only rows whose owner is in the CTE `acked` (the ones whose ACK matched).
 */
function insertSql(rows: Rows, position: number, ackedOnly: boolean): string {
  const table = rows.group.table;
  const columns = rows.group.columns;
  return `INSERT INTO ${table} (${columns.join(', ')})
    SELECT ${columns.map((c) => `r.${c}`).join(', ')}
    FROM json_array_elements($${position}::json) WITH ORDINALITY AS e(v, i)
    ${ackedOnly ? 'JOIN acked ON acked.event_id = e.v->>0' : ''}
    CROSS JOIN LATERAL json_populate_record(NULL::${table}, e.v->1) AS r
    ORDER BY e.i`;
}

/**
 * The rows of `groups` (of messages already ACKed in `x`'s open transaction): one
 * statement per table and column list, whatever the number of rows, in the order the
 * tables first appear.
 */
export async function insertRows(x: Executor, groups: readonly RowGroup[]): Promise<void> {
  const byTable = new Map<string, Rows>();
  collect(byTable, '', groups);
  for (const rows of byTable.values()) {
    await x.query(insertSql(rows, 1, false), [parameter(rows)]);
  }
}

/**
 * The common case of a worker whose handler declares its rows: every write of the batch
 * a completion with `insert` rows only, recorded by {@link fusedCompletions} (one round
 * trip, no BEGIN, COMMIT or savepoint). Returns each ACKed message as done (the others'
 * leases are lost), or `undefined` when the database refused the statement: then nothing
 * of it was written, and the caller writes the batch in a transaction, where a refused
 * row fails its own message alone. A store that cannot be written at all throws.
 */
export async function completeRowsAlone(
  store: Store,
  writes: readonly UserWrite[],
  now: number,
): Promise<Map<string, FailureMove | null> | undefined> {
  let acked: { event_id: string }[];
  try {
    ({ rows: acked } = await store.read((x) => {
      const { text, values } = fusedCompletions(x.dialect, writes, now);
      return x.query<{ event_id: string }>(text, values);
    }));
  } catch (error) {
    if (error instanceof OnceqError && error.exitCode === 1) throw error;
    return undefined;
  }
  // The rows went in with their ACKs, committed: both crash points are this instant.
  crashPoint('after-completion-write');
  crashPoint('after-ack');
  return new Map(acked.map((row) => [row.event_id, null]));
}

/**
 * User completions with `insert` rows only (no `write`) as ONE statement, committing by
 * itself: the fenced ACK of every message (leased at its generation with time left at
 * the statement's now), onceq's `completions` record of each message it ACKed, and the
 * rows of those messages only, one `INSERT` per table and column list. PostgreSQL runs
 * it all or nothing: a row the database refuses leaves none of it. Returns the ids it
 * ACKed.
 */
export function fusedCompletions(
  d: SqlDialect,
  writes: readonly UserWrite[],
  now: number,
): { text: SqlText; values: unknown[] } {
  const byTable = new Map<string, Rows>();
  for (const write of writes) collect(byTable, write.lease.eventId, write.completion.rows);
  const all = [...byTable.values()];
  return {
    text: fusedText(d, all),
    values: [
      d.nowValue(now),
      writes.map((w) => w.lease.eventId),
      writes.map((w) => w.lease.generation),
      writes.map((w) => w.completion.summary ?? null),
      ...all.map(parameter),
    ],
  };
}

/**
 * The text of {@link fusedCompletions} for a dialect and a list of tables and column
 * lists, built once per list (a handler has few): `ack-with-completions` (its fenced ACK,
 * records and counter deltas) with one `INSERT` of the user's per table.
 */
const fusedTexts = new Map<string, SqlText>();

function fusedText(d: SqlDialect, all: readonly Rows[]): SqlText {
  const key = `${d.key} ${all.map((rows) => rows.group.key).join(' ')}`;
  const known = fusedTexts.get(key);
  if (known !== undefined) return known;
  const inserts = all.map(
    (rows, index) => `, rows_${index} AS (${insertSql(rows, 5 + index, true)})`,
  );
  const text = sqlText(
    'complete-rows',
    all.length,
    `WITH input AS (
      SELECT * FROM unnest($2::text[], $3::integer[], $4::text[]) AS t(event_id, generation, summary)
    ), acked AS (${ackInput(d)}), recorded AS (
      INSERT INTO ${d.table('completions')} (event_id, summary, created_at)
      SELECT input.event_id, input.summary, ${d.now(1)}
      FROM input JOIN acked ON acked.event_id = input.event_id
    ), counted AS (${ackCounts(d, false)})${inserts.join('')}
    SELECT event_id FROM acked`,
  );
  if (fusedTexts.size >= 100) fusedTexts.clear();
  fusedTexts.set(key, text);
  return text;
}
