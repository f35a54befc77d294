/**
 * A completion's `insert` (handler/contract.ts `CompletionRows`), checked and copied once:
 * names are checked against the identifier rule, values against {@link ColumnValue}, and
 * the copy (rows grouped by table and column list, values ready to bind) is what the
 * driver writes. Nothing of the handler's object is read again.
 */

/** Rows of one table with one column list, as `complete` inserts them. */
export interface RowGroup {
  /**
   * The table, already quoted for SQL (`"shop"."ledger_entries"`). A user's table is
   * written as given: an unqualified name resolves the way any statement on the
   * connection does (SQLite: the store's file; PostgreSQL: the connection's
   * `search_path`), never in onceq's schema. One of onceq's own tables ({@link own}) is
   * named in the store's schema.
   */
  readonly table: string;
  /** One of onceq's own tables (`effects`, `completions`, `deliveries`), not a user's. */
  readonly own: boolean;
  /**
   * The columns, already quoted, in the order every row's values follow. A quoted name
   * is also its JSON string: a name holds no quote and no backslash.
   */
  readonly columns: readonly string[];
  readonly rows: readonly (readonly unknown[])[];
  /**
   * Per row, which of its values are the JSON text of a plain array or object (bound as
   * text, written as JSON where the backend reads rows as JSON); `null` when none is.
   */
  readonly json: readonly (readonly boolean[] | null)[];
  /** The table and column list: groups with the same key go in with one statement. */
  readonly key: string;
  /**
   * A column the write itself fills with the owning message's event id (onceq's own rows:
   * `effects`, `completions`), after {@link columns}; null for a user's rows.
   */
  readonly owner: string | null;
  /** A column the write fills with its own clock reading, after {@link owner}; or null. */
  readonly stamp: string | null;
}

const EFFECT_COLUMNS = ['"amount_cents"', '"category"'] as const;
const RECORD_COLUMNS = ['"summary"'] as const;

/**
 * The lesson's money effect as a completion's rows: one row of the built-in `effects`
 * table, its event id and `created_at` filled by the write.
 */
export function effectRows(effect: { category: string; amountCents: number }): RowGroup {
  return {
    key: '"effects" "amount_cents","category" owner stamp',
    table: '"effects"',
    own: true,
    columns: EFFECT_COLUMNS,
    rows: [[effect.amountCents, effect.category]],
    json: [null],
    owner: '"event_id"',
    stamp: '"created_at"',
  };
}

/**
 * onceq's record of a message a handler's own completion finished: one row of the
 * built-in `completions` table with its summary, event id and `created_at` filled by the
 * write. Every completion that is not the money effect carries it.
 */
export function recordRows(summary: string | null): RowGroup {
  return {
    key: '"completions" "summary" owner stamp',
    table: '"completions"',
    own: true,
    columns: RECORD_COLUMNS,
    rows: [[summary]],
    json: [null],
    owner: '"event_id"',
    stamp: '"created_at"',
  };
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A table name as checked: quoted for SQL. */
interface TableName {
  readonly quoted: string;
  /** The row shape this table was last given, by its keys in the row's order. */
  last: { readonly keys: readonly string[]; readonly shape: RowShape } | null;
}

/** A row's column names (in the order the row gives them) as checked: sorted and quoted. */
interface RowShape {
  /** The names in sorted order, as the row spells them. */
  readonly names: readonly string[];
  /** The same, quoted. */
  readonly quoted: readonly string[];
  /** The quoted names joined: the column part of a group's key. */
  readonly key: string;
}

/** Whether `a` and `b` hold the same strings in the same order. */
function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Names already found valid: a handler names the same few tables and column lists for
 * every message, so each is checked and quoted once. Only valid names are kept, and the
 * caches start over past {@link NAME_CACHE_SIZE} entries.
 */
const tableNames = new Map<string, TableName>();
const rowShapes = new Map<string, RowShape>();
const NAME_CACHE_SIZE = 1000;

function remember<T>(cache: Map<string, T>, key: string, value: T): T {
  if (cache.size >= NAME_CACHE_SIZE) cache.clear();
  cache.set(key, value);
  return value;
}

/** `table` checked and quoted, or `null` when it is not a valid table name. */
function tableName(table: string): TableName | null {
  const known = tableNames.get(table);
  if (known !== undefined) return known;
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => NAME.test(part))) return null;
  return remember(tableNames, table, {
    quoted: parts.map(quote).join('.'),
    last: null,
  });
}

/** The shape of a row with own keys `keys`, or `null` when a column name is not valid. */
function rowShape(keys: readonly string[]): RowShape | null {
  // Valid names hold no comma: a cached shape matches only the very same keys.
  const joined = keys.join(',');
  const known = rowShapes.get(joined);
  if (known !== undefined && known.names.length === keys.length) return known;
  if (!keys.every((key) => NAME.test(key))) return null;
  const names = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const quoted = names.map(quote);
  return remember(rowShapes, joined, { names, quoted, key: quoted.join(',') });
}

interface Group {
  key: string;
  table: string;
  columns: readonly string[];
  rows: unknown[][];
  json: (boolean[] | null)[];
  own: boolean;
  owner: null;
  stamp: null;
}

/**
 * The groups of `insert`, or one sentence saying what is wrong and where. `own`: the
 * tables are onceq's own (named in the store's schema), as a completion's `deliver`
 * rows are; a user's `insert` names its own tables.
 */
export function checkRows(
  insert: unknown,
  own = false,
): { groups: RowGroup[] } | { violation: string } {
  if (!isPlainObject(insert)) {
    return {
      violation: `the completion's insert must be an object of table names, not ${what(insert)}`,
    };
  }
  const groups = new Map<string, Group>();
  for (const table of Object.keys(insert)) {
    const name = tableName(table);
    if (name === null) {
      return {
        violation: `the completion's insert names table ${JSON.stringify(table)}: a table name is letters, digits and _ (not starting with a digit), with at most one schema dot`,
      };
    }
    const given = insert[table];
    const rows = Array.isArray(given) ? [...given] : [given];
    for (let index = 0; index < rows.length; index++) {
      const where = () =>
        Array.isArray(given)
          ? `insert row ${index + 1} of table ${table}`
          : `insert row of table ${table}`;
      const copied = copyRow(rows[index], name, where);
      if ('violation' in copied) return copied;
      const key = `${own ? 'own ' : ''}${name.quoted} ${copied.shape.key}`;
      let group = groups.get(key);
      if (group === undefined) {
        group = {
          key,
          table: name.quoted,
          own,
          columns: copied.shape.quoted,
          rows: [],
          json: [],
          owner: null,
          stamp: null,
        };
        groups.set(key, group);
      }
      group.rows.push(copied.values);
      group.json.push(copied.json);
    }
  }
  return { groups: [...groups.values()] };
}

/** One row read once: its columns sorted (so rows of one table share a statement). */
function copyRow(
  row: unknown,
  table: TableName,
  where: () => string,
): { shape: RowShape; values: unknown[]; json: boolean[] | null } | { violation: string } {
  if (!isPlainObject(row)) {
    return {
      violation: `the completion's ${where()} must be an object of column values, not ${what(row)}`,
    };
  }
  const keys = Object.keys(row);
  if (keys.length === 0) return { violation: `the completion's ${where()} has no columns` };
  // Rows of one table mostly come with the same keys in the same order: compared, not joined.
  const last = table.last;
  const shape = last !== null && sameKeys(last.keys, keys) ? last.shape : rowShape(keys);
  if (shape === null) return refusedRow(row, keys, where());
  if (shape !== last?.shape) table.last = { keys, shape };
  const values: unknown[] = [];
  let json: boolean[] | null = null;
  for (const column of shape.names) {
    const value = row[column];
    const bound = bindable(value);
    if (bound === REFUSED) return { violation: refusedValue(where(), column, value) };
    if (typeof value === 'object' && value !== null) {
      json ??= shape.names.map(() => false);
      json[values.length] = true;
    }
    values.push(bound);
  }
  return { shape, values, json };
}

/** The sentence for a row with a column name that is not valid: its first problem in column order. */
function refusedRow(
  row: Record<string, unknown>,
  keys: readonly string[],
  where: string,
): { violation: string } {
  const entries = keys.map((column) => [column, row[column]] as const);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [column, value] of entries) {
    if (!NAME.test(column)) {
      return {
        violation: `the completion's ${where} names column ${JSON.stringify(column)}: a column name is letters, digits and _ (not starting with a digit)`,
      };
    }
    if (bindable(value) === REFUSED) return { violation: refusedValue(where, column, value) };
  }
  throw new Error('unreachable: a row shape was refused with every name valid');
}

function refusedValue(where: string, column: string, value: unknown): string {
  return `the completion's ${where} has column ${column} = ${what(value)}: a value is a string, a finite number, a bigint, a boolean, null, or a plain array or object`;
}

const REFUSED = Symbol('refused');

/** The value to bind for `value`, its JSON text for a plain array or object. */
function bindable(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'bigint':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : REFUSED;
    case 'object': {
      if (value === null) return null;
      const text = plainJson(value);
      return text === REFUSED ? REFUSED : text;
    }
    default:
      return REFUSED;
  }
}

/** The JSON text of a plain array or object, read once, or {@link REFUSED}. */
function plainJson(value: unknown): string | typeof REFUSED {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : REFUSED;
    case 'object':
      break;
    default:
      return REFUSED;
  }
  const parts: string[] = [];
  if (Array.isArray(value)) {
    for (const item of [...value]) {
      const text = plainJson(item);
      if (text === REFUSED) return REFUSED;
      parts.push(text);
    }
    return `[${parts.join(',')}]`;
  }
  if (!isPlainObject(value)) return REFUSED;
  for (const key of Object.keys(value)) {
    const text = plainJson(value[key]);
    if (text === REFUSED) return REFUSED;
    parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function quote(name: string): string {
  return `"${name}"`;
}

function what(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)
      ?.constructor?.name;
    return typeof name === 'string' && name !== 'Object' ? `a ${name}` : 'an object';
  }
  if (typeof value === 'number') return String(value);
  return typeof value;
}

/** The JSON text of a plain array or object (as an `insert` value stores it), or undefined for anything else. */
export function jsonText(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const text = plainJson(value);
  return text === REFUSED ? undefined : text;
}
