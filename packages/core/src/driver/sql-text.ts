/**
 * How onceq writes SQL: by hand, per backend, as text. A statement is a function of the
 * store's {@link SqlDialect} (and, for IN lists and multi-row INSERTs, of its arity `n`)
 * that returns the text, built once per dialect and arity and kept in a Map; the caller
 * binds a plain parameter array in placeholder order.
 *
 * Statements both backends run with the same words are written once, with the
 * dialect's placeholders, table names and clock (driver/shared-statements.ts,
 * driver/sql/*.ts); what only one backend runs is written in its own placeholder style
 * (`sqlite/statements.ts` with `?N`, `postgres/statements.ts` with `$N`).
 *
 * Three rules every text keeps:
 *
 * - each distinct value is bound once (a numbered placeholder used twice is one bound
 *   value): binding is per parameter and per execution, and most of a 500-row INSERT's
 *   CPU time on SQLite;
 * - constants the planner needs are SQL literals, not parameters: the states (`'ready'`,
 *   `'leased'` …) match the leading column of the partial indexes when the statement is
 *   prepared (tests/conformance/query-plans.test.ts);
 * - a bound LIMIT goes through {@link SqlDialect.limit}, never a bare placeholder.
 */

/** A statement's text and the name a server may prepare it under. */
export interface SqlText {
  /**
   * `onceq/<operation>/<arity>/<hash of the text>`, usable as a server-side statement
   * name (PostgreSQL): one name always means one text, so a server connection that a
   * pooler hands from one client to another never runs another store's statement under
   * it.
   */
  readonly name: string;
  readonly sql: string;
  /**
   * Planned again at every run, never prepared once (PostgreSQL: an unnamed statement):
   * for a statement off the hot path whose best plan changes as the table grows, so a
   * plan made while the table was small is never kept for it.
   */
  readonly replan?: true;
}

/** The tables onceq's statements name. */
export type Table =
  | 'messages'
  | 'message_keys'
  | 'effects'
  | 'completions'
  | 'onceq_counts'
  | 'onceq_meta'
  | 'onceq_migrations'
  | 'deliveries'
  | 'delivery_attempts'
  | 'disabled_endpoints';

/** How one store's backend writes the parts of a statement that differ between backends. */
export interface SqlDialect {
  /** Equal for dialects that write every statement the same (backend and schema). */
  readonly key: string;
  /** The schema the tables live in (PostgreSQL); undefined where there is none (SQLite). */
  readonly schema: string | undefined;
  /** Placeholder `i` (1-based): SQLite `?i`, PostgreSQL `$i`. */
  param(i: number): string;
  /**
   * A `LIMIT` bound at placeholder `i`. SQLite reads a bare bound LIMIT into the plan
   * when it prepares the statement and prepares it again whenever that parameter is
   * bound, which is every execution; behind a `CAST` the value is read at run time and
   * the prepared statement is kept.
   */
  limit(i: number): string;
  /** A table as statements name it: PostgreSQL `schema.table`, never by `search_path`. */
  table(name: Table): string;
  /**
   * The statement's "now", from placeholder `i`. SQLite: the bound value (the host's
   * clock, or a model clock). PostgreSQL: the server's clock read by the statement
   * itself, unless a model clock or `--now` bound a reading (see {@link nowValue}).
   */
  now(i: number): string;
  /** The statement's now plus the seconds bound at placeholder `seconds`. */
  nowPlus(i: number, seconds: number): string;
  /** What to bind at a {@link now} placeholder for the caller's reading `now`. */
  nowValue(now: number): number | null;
  /**
   * The fence's "still validly leased at now" (now from placeholder `i`) for the row
   * named by `prefix` (`m.`, or '' for the statement's own table): state `leased` and
   * `lease_until > now`. PostgreSQL writes it as one `CASE` expression the planner cannot
   * match to an index, so a fenced write finds its rows by primary key. As two
   * conditions, `state = 'leased'` matches the condition of the partial `messages_lease`,
   * and with statistics taken while no row was leased (a store analyzed after a bulk
   * load, or while idle) the planner counts on one leased row and walks every leased row
   * of that index instead: with many workers holding leases, a batch ACK
   * read every live lease rather than its own rows by primary key.
   * tests/postgres/query-plans.test.ts holds the plans to that.
   */
  liveLease(i: number, prefix?: string): string;
  /**
   * Rows lock (`FOR UPDATE`, `FOR SHARE`): concurrent writers exist. Where not (SQLite),
   * `BEGIN IMMEDIATE` already holds the one write lock.
   */
  readonly rowLocks: boolean;
  /**
   * Whether a key's positions live apart from its messages, in `message_keys` (PostgreSQL,
   * migration 0019: a state change there writes a new row version with an entry in every
   * index, so positions kept on `messages` were written again at each one), and are
   * written on their own. SQLite keeps them in `messages` (`seq`, the `messages_key`
   * index): an update there rewrites only the index entries of the columns it changes.
   */
  readonly positionsApart: boolean;
}

/**
 * The relation a key's positions are read from, with the columns `queue`,
 * `ordering_key`, `seq` and `event_id` (see {@link SqlDialect.positionsApart}).
 */
export function keyPositions(d: SqlDialect): string {
  return d.positionsApart ? d.table('message_keys') : d.table('messages');
}

/** SQLite's placeholders, bare table names and the bound clock. */
export const sqliteDialect: SqlDialect = {
  key: 'sqlite',
  schema: undefined,
  param: (i) => `?${i}`,
  limit: (i) => `CAST(?${i} AS INTEGER)`,
  table: (name) => name,
  now: (i) => `?${i}`,
  nowPlus: (i, seconds) => `(?${i} + ?${seconds})`,
  nowValue: (now) => now,
  liveLease: (i, prefix = '') => `${prefix}state = 'leased' AND ${prefix}lease_until > ?${i}`,
  rowLocks: false,
  positionsApart: false,
};

/**
 * The server's clock in whole Unix seconds, read by the statement itself. The time the
 * statement began (`statement_timestamp()`): one reading for every row it touches, and
 * stable, so the planner can use it in index conditions (claim's `available_at <= now`
 * on `messages_ready_queue`). Not `now()`, the start of the transaction: a transaction held
 * open (a handler's completion written in it, a caller's transaction) would judge a
 * fence or start a lease on a reading already that old. Not `clock_timestamp()`: it
 * changes from row to row, and the planner cannot use a volatile value in an index.
 */
const SERVER_SECONDS = 'floor(extract(epoch FROM statement_timestamp()))::bigint';

/**
 * PostgreSQL's placeholders, tables in `schema` (validated by the caller: safe to
 * write into the text), and the server's clock unless `modelClock` (a model clock or
 * `--now`: its reading is bound instead of NULL).
 */
export function postgresDialect(schema: string, modelClock: boolean): SqlDialect {
  const now = (i: number) => `COALESCE($${i}::bigint, ${SERVER_SECONDS})`;
  return {
    key: `postgres/${schema}`,
    schema,
    param: (i) => `$${i}`,
    limit: (i) => `$${i}`,
    table: (name) => `${schema}.${name}`,
    now,
    nowPlus: (i, seconds) => `(${now(i)} + $${seconds}::bigint)`,
    nowValue: modelClock ? (reading) => reading : () => null,
    liveLease: (i, prefix = '') =>
      `CASE WHEN ${prefix}state = 'leased' THEN ${prefix}lease_until > ${now(i)} ELSE false END`,
    rowLocks: true,
    positionsApart: true,
  };
}

export function sqlText(operation: string, arity: number, sql: string): SqlText {
  return { name: `onceq/${operation}/${arity}/${Bun.hash(sql).toString(36)}`, sql };
}

/** A statement of fixed shape: its text per dialect, written once and kept. */
export function statement(
  operation: string,
  write: (d: SqlDialect) => string,
): (d: SqlDialect) => SqlText {
  const byDialect = new Map<string, SqlText>();
  return (d) => {
    let text = byDialect.get(d.key);
    if (text === undefined) {
      text = sqlText(operation, 1, write(d));
      byDialect.set(d.key, text);
    }
    return text;
  };
}

/**
 * A statement for `n` messages (an IN list, `n` rows): its text per dialect and arity;
 * `replan` marks it {@link SqlText.replan}.
 */
export function statementFor(
  operation: string,
  write: (d: SqlDialect, n: number) => string,
  options: { replan?: true } = {},
): (d: SqlDialect, n: number) => SqlText {
  const byDialect = new Map<string, Map<number, SqlText>>();
  return (d, n) => {
    let byArity = byDialect.get(d.key);
    if (byArity === undefined) {
      byArity = new Map();
      byDialect.set(d.key, byArity);
    }
    let text = byArity.get(n);
    if (text === undefined) {
      text = sqlText(operation, n, write(d, n));
      if (options.replan) text = { ...text, replan: true };
      byArity.set(n, text);
    }
    return text;
  };
}

/** Placeholders `from` … `from + n - 1`, comma-separated (an IN list). */
export function params(d: SqlDialect, from: number, n: number): string {
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = d.param(from + i);
  return out.join(', ');
}
