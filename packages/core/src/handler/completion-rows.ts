/**
 * A completion's `insert` (handler/contract.ts `CompletionRows`), checked and copied once:
 * names are checked against the identifier rule, values against {@link ColumnValue}, and
 * the copy (rows grouped by table and column list, values ready to bind) is what the
 * driver writes. Nothing of the handler's object is read again.
 */

/** Rows of one table with one column list, as `complete` inserts them. */
export interface RowGroup {
  /** The table, already quoted for SQL (`"shop"."ledger_entries"`). */
  readonly table: string;
  /** Whether the name carries its schema (`shop.ledger_entries`), else it is the store's place. */
  readonly qualified: boolean;
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
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The groups of `insert`, or one sentence saying what is wrong and where. */
export function checkRows(insert: unknown): { groups: RowGroup[] } | { violation: string } {
  if (!isPlainObject(insert)) {
    return {
      violation: `the completion's insert must be an object of table names, not ${what(insert)}`,
    };
  }
  const groups = new Map<
    string,
    {
      table: string;
      qualified: boolean;
      columns: string[];
      rows: unknown[][];
      json: (boolean[] | null)[];
    }
  >();
  for (const table of Object.keys(insert)) {
    const parts = table.split('.');
    if (parts.length > 2 || !parts.every((part) => NAME.test(part))) {
      return {
        violation: `the completion's insert names table ${JSON.stringify(table)}: a table name is letters, digits and _ (not starting with a digit), with at most one schema dot`,
      };
    }
    const given = insert[table];
    const rows = Array.isArray(given) ? [...given] : [given];
    for (const [index, row] of rows.entries()) {
      const where = Array.isArray(given)
        ? `insert row ${index + 1} of table ${table}`
        : `insert row of table ${table}`;
      const copied = copyRow(row, where);
      if ('violation' in copied) return copied;
      const quoted = parts.map(quote).join('.');
      const key = `${quoted} ${copied.columns.join(',')}`;
      let group = groups.get(key);
      if (group === undefined) {
        group = {
          table: quoted,
          qualified: parts.length === 2,
          columns: copied.columns.map(quote),
          rows: [],
          json: [],
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
  where: string,
): { columns: string[]; values: unknown[]; json: boolean[] | null } | { violation: string } {
  if (!isPlainObject(row)) {
    return {
      violation: `the completion's ${where} must be an object of column values, not ${what(row)}`,
    };
  }
  const entries = Object.keys(row).map((column) => [column, row[column]] as const);
  if (entries.length === 0) return { violation: `the completion's ${where} has no columns` };
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const columns: string[] = [];
  const values: unknown[] = [];
  let json: boolean[] | null = null;
  for (const [column, value] of entries) {
    if (!NAME.test(column)) {
      return {
        violation: `the completion's ${where} names column ${JSON.stringify(column)}: a column name is letters, digits and _ (not starting with a digit)`,
      };
    }
    const bound = bindable(value);
    if (bound === REFUSED) {
      return {
        violation: `the completion's ${where} has column ${column} = ${what(value)}: a value is a string, a finite number, a bigint, a boolean, null, or a plain array or object`,
      };
    }
    if (typeof value === 'object' && value !== null) {
      json ??= entries.map(() => false);
      json[columns.length] = true;
    }
    columns.push(column);
    values.push(bound);
  }
  return { columns, values, json };
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
