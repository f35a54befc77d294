/**
 * Rewrites a compiled statement's anonymous `?` placeholders (Kysely's SQLite compiler)
 * into SQLite's numbered form, so that each distinct input is bound once:
 *
 * - a constant number or `null` the builder wrote (`attempts: 0`, `lease_until: null`,
 *   `.limit(100)`) becomes an SQL literal: nothing to bind per execution;
 * - every occurrence of one slot (`p.value('now')` five times in a row of an INSERT, the
 *   ids that appear in both the `IN` list and the `(id, generation)` pairs of the ACK)
 *   shares one `?N`.
 *
 * Why: binding is per parameter and per execution, so a 128-row enqueue INSERT binds 257
 * parameters instead of 1024, and binding is most of its CPU time. The statement's meaning
 * is unchanged: the same values reach the same places.
 *
 * Strings are never inlined (no quoting to get wrong); only finite numbers, bigints and
 * `null`. Returns null, leaving the statement as it was, when the SQL does not use plain
 * `?` placeholders for exactly its parameters (PostgreSQL's `$1`, or SQL that already
 * numbers its own).
 */

/** Where bound value number `i` (0-based) of the rewritten statement comes from. */
export type Source =
  | { readonly slot: string; readonly index: number | null }
  | { readonly constant: unknown };

export interface Numbered {
  sql: string;
  /** One entry per `?N`, in N order. */
  sources: Source[];
}

export function numberPlaceholders(sql: string, sources: readonly Source[]): Numbered | null {
  const positions = placeholderPositions(sql);
  if (positions === null || positions.length !== sources.length) return null;
  const numbered: Source[] = [];
  const numberOf = new Map<string, number>();
  let out = '';
  let from = 0;
  positions.forEach((at, k) => {
    const source = sources[k] as Source;
    let replacement: string;
    const literal = 'constant' in source ? asLiteral(source.constant) : null;
    if (literal !== null) {
      replacement = literal;
    } else {
      // Slots are shared by name and element; other constants (strings) get their own number.
      const key = 'slot' in source ? `${source.slot}\u0000${source.index ?? ''}` : null;
      let n = key === null ? undefined : numberOf.get(key);
      if (n === undefined) {
        numbered.push(source);
        n = numbered.length;
        if (key !== null) numberOf.set(key, n);
      }
      replacement = `?${n}`;
    }
    out += sql.slice(from, at) + replacement;
    from = at + 1;
  });
  return { sql: out + sql.slice(from), sources: numbered };
}

function asLiteral(value: unknown): string | null {
  if (value === null) return 'NULL';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isFinite(value)) {
    // Integers as integers; other numbers in a form SQLite reads back exactly.
    return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
      ? String(value)
      : null;
  }
  return null;
}

/**
 * Offsets of the anonymous `?` placeholders outside quoted strings and identifiers, or
 * null when the SQL numbers or names its own (`?1`, `:x`, `@x`, `$x`), which would mix
 * badly with numbering.
 */
function placeholderPositions(sql: string): number[] | null {
  const positions: number[] = [];
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === '`') {
      // Skip to the closing quote; a doubled quote is an escaped one.
      for (i++; i < sql.length; i++) {
        if (sql[i] === c) {
          if (sql[i + 1] === c) i++;
          else break;
        }
      }
    } else if (c === '[') {
      i = sql.indexOf(']', i);
      if (i < 0) return null;
    } else if (c === '-' && sql[i + 1] === '-') {
      i = sql.indexOf('\n', i);
      if (i < 0) break;
    } else if (c === '/' && sql[i + 1] === '*') {
      i = sql.indexOf('*/', i + 2);
      if (i < 0) return null;
      i++;
    } else if (c === '?') {
      if (/[0-9]/.test(sql[i + 1] ?? '')) return null;
      positions.push(i);
    } else if ((c === ':' || c === '@' || c === '$') && /[A-Za-z0-9_]/.test(sql[i + 1] ?? '')) {
      return null;
    }
  }
  return positions;
}
