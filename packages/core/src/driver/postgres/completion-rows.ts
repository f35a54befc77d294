/**
 * A completion's rows on PostgreSQL, as JSON: each table (and column list) of a batch is
 * one parameter holding every row as `[owner event id, {column: value}]`, and the server
 * turns each value into its column's type with `json_populate_record` on the table's own
 * row type, so no column type has to be known here. A value reaches its column as the
 * text PostgreSQL would get for it as a bound parameter (a string's contents, a number's
 * digits, a plain array's or object's JSON text), except that a `json`/`jsonb` column
 * keeps a JSON value as the value it is (a string stays a string). The rows of onceq's
 * own tables (`effects`, `completions`), whose column types onceq knows, go as one typed
 * array per column instead (`unnest`: no JSON to build or read). The result template
 * (sql/complete.ts) joins each table's rows to the ACKs that matched.
 */
import type { RowGroup } from '../../handler/completion-rows.ts';
import type { SqlDialect } from '../sql-text.ts';

/** The rows of one table and column list, of any number of messages, with their owners. */
export interface Rows {
  readonly group: RowGroup;
  readonly owners: string[];
  readonly values: (readonly unknown[])[];
  /** Per row, which values are JSON text (see {@link RowGroup.json}). */
  readonly json: (readonly boolean[] | null)[];
  /** Whether a row holds a value `JSON.stringify` would not write as PostgreSQL gets it. */
  special: boolean;
}

/** The column types of onceq's own tables, by quoted name: their rows go as typed arrays. */
const OWN_TABLES: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map([
  [
    '"effects"',
    new Map([
      ['"amount_cents"', 'integer'],
      ['"category"', 'text'],
    ]),
  ],
  ['"completions"', new Map([['"summary"', 'text']])],
]);

/** The SQL types of `group`'s columns when it is one of onceq's own tables, else null. */
function typesOf(group: RowGroup): string[] | null {
  if (!group.own || group.owner === null) return null;
  const known = OWN_TABLES.get(group.table);
  if (known === undefined) return null;
  const types = group.columns.map((column) => known.get(column));
  return types.every((type) => type !== undefined) ? (types as string[]) : null;
}

/** How many parameters the rows of `rows` take: one JSON text, or one array per column and the owners. */
export function parameterCount(rows: Rows): number {
  return typesOf(rows.group) === null ? 1 : rows.group.columns.length + 1;
}

/** Adds the rows of `groups` (one message's, owned by `owner`) to `byTable`. */
export function collect(
  byTable: Map<string, Rows>,
  owner: string,
  groups: readonly RowGroup[],
): void {
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
export function parameters(rows: Rows): unknown[] {
  if (typesOf(rows.group) === null) return [parameter(rows)];
  const columns = rows.group.columns.map((_, c) => rows.values.map((values) => values[c]));
  return [rows.owners, ...columns];
}

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
 * `INSERT … SELECT` of the rows in parameter `$position`, in the order given, only those
 * whose owner is in the CTE `acked` (the messages whose ACK matched); the owner column
 * gets the owner's event id and the stamp column the statement's now (`$1`).
 * `returning`: what the step returns (the effects' counters read it), or nothing.
 */
export function insertSql(rows: Rows, d: SqlDialect, position: number, returning = ''): string {
  const { group } = rows;
  const table = group.own ? `${d.schema}.${group.table}` : group.table;
  const columns = [...group.columns];
  const values = group.columns.map((c) => `r.${c}`);
  if (group.owner !== null) {
    columns.push(group.owner);
    values.push('acked.event_id');
  }
  if (group.stamp !== null) {
    columns.push(group.stamp);
    values.push(d.now(1));
  }
  const types = typesOf(group);
  const from =
    types === null
      ? `json_array_elements($${position}::json) WITH ORDINALITY AS e(v, i)
    JOIN acked ON acked.event_id = e.v->>0
    CROSS JOIN LATERAL json_populate_record(NULL::${table}, e.v->1) AS r
    ORDER BY e.i`
      : `unnest($${position}::text[], ${types.map((type, c) => `$${position + 1 + c}::${type}[]`).join(', ')})
      AS r(onceq_owner, ${group.columns.join(', ')})
    JOIN acked ON acked.event_id = r.onceq_owner`;
  return `INSERT INTO ${table} (${columns.join(', ')})
    SELECT ${values.join(', ')}
    FROM ${from}${returning === '' ? '' : `\n    RETURNING ${returning}`}`;
}

/** Whether `group` is onceq's own `effects` table (its rows move the effect counters). */
export function isEffects(group: RowGroup): boolean {
  return group.own && group.table === '"effects"';
}
