import type { Compilable, CompiledQuery, Kysely, RawBuilder } from 'kysely';
import type { CompletionTx } from '../handler/contract.ts';
import type { Database } from '../schema.ts';
import type { Capabilities } from './driver.ts';
import { numberPlaceholders, type Source } from './placeholders.ts';

/**
 * Statements built with Kysely once per store and arity, then run many times with fresh
 * values: the protocol's hot path pays for neither query building nor compiling per
 * message, and on SQLite it runs straight on the connection's cached prepared
 * statement (see `BunSqliteConnection.run`).
 *
 * A statement marks its inputs with {@link Slots}: `p.value('now')` stands for one bound
 * value, `p.list('ids', n)` for `n` of them. Compiling records where each slot landed in
 * the parameter list; constants written into the builder stay fixed parameters.
 */
export interface Statement<Row> {
  readonly name: string;
  readonly build: (context: BuildContext) => Compilable<Row> | RawBuilder<Row>;
}

/** What a statement is built from: the store's Kysely (for its dialect), slots, arity. */
export interface BuildContext {
  readonly db: Kysely<Database>;
  readonly p: Slots;
  /** How many messages the statement handles (IN lists, multi-row inserts). */
  readonly n: number;
  readonly capabilities: Capabilities;
  /** PostgreSQL: the schema the store's tables live in; undefined on SQLite. */
  readonly schema: string | undefined;
}

export function defineStatement<Row>(name: string, build: Statement<Row>['build']): Statement<Row> {
  return { name, build };
}

/** Values for a statement's slots: a scalar per `value` slot, an array per `list` slot. */
export type SlotValues = Readonly<Record<string, unknown>>;

class Slot {
  constructor(
    readonly name: string,
    readonly index: number | null,
  ) {}
}

export interface Slots {
  /** One bound value, typed as the column it stands in for. */
  value<T>(name: string): T;
  /** `n` bound values, element `i` taken from `values[name][i]`. */
  list<T>(name: string, n: number): T[];
}

const slots: Slots = {
  value: <T>(name: string) => new Slot(name, null) as unknown as T,
  list: <T>(name: string, n: number) =>
    Array.from({ length: n }, (_, i) => new Slot(name, i) as unknown as T),
};

/** A compiled statement and how to fill its parameter list from {@link SlotValues}. */
export interface CompiledStatement {
  /**
   * `onceq/<statement>/<arity>/<hash of the text>`, usable as a server-side statement
   * name: one name always means one text, so a server connection that a pooler hands
   * from one client to another never runs another store's statement under it.
   */
  readonly name: string;
  readonly sql: string;
  readonly query: CompiledQuery;
  readonly bind: (values: SlotValues) => unknown[];
}

function compileStatement(
  db: Kysely<Database>,
  capabilities: Capabilities,
  statement: Statement<unknown>,
  n: number,
  schema: string | undefined,
): CompiledStatement {
  // A query builder's compile() takes no argument; a raw `sql` statement's takes the
  // Kysely instance (for its dialect). Passing it serves both.
  const built = statement.build({ db, p: slots, n, capabilities, schema }) as {
    compile(db: Kysely<Database>): CompiledQuery;
  };
  const query = built.compile(db);
  const compiled: Source[] = query.parameters.map((parameter) =>
    parameter instanceof Slot
      ? { slot: parameter.name, index: parameter.index }
      : { constant: parameter },
  );
  // SQLite: constants inlined, each slot bound once (placeholders.ts); else as compiled.
  const numbered = numberPlaceholders(query.sql, compiled);
  const sources = numbered?.sources ?? compiled;
  const text = numbered?.sql ?? query.sql;
  return {
    name: `onceq/${statement.name}/${n}/${Bun.hash(text).toString(36)}`,
    sql: text,
    query,
    bind: binder(statement.name, sources),
  };
}

/**
 * The parameter list for one execution, built with a plain loop over precomputed
 * sources: this runs for every statement of the hot path.
 */
function binder(name: string, sources: readonly Source[]): (values: SlotValues) => unknown[] {
  const count = sources.length;
  const slotNames = sources.map((s) => ('slot' in s ? s.slot : null));
  const indexes = sources.map((s) => ('slot' in s ? s.index : null));
  const constants = sources.map((s) => ('constant' in s ? s.constant : undefined));
  return (values) => {
    const out = new Array<unknown>(count);
    for (let i = 0; i < count; i++) {
      const slot = slotNames[i];
      if (slot === null || slot === undefined) {
        out[i] = constants[i];
        continue;
      }
      const value = values[slot];
      if (value === undefined) throw new Error(`${name}: no value for slot ${slot}`);
      const index = indexes[i];
      out[i] = index === null || index === undefined ? value : (value as readonly unknown[])[index];
    }
    return out;
  };
}

/**
 * Compiled statements per `(statement, arity)`. The text depends only on the dialect's
 * compiler and the capabilities, never on the store, so stores of one kind share them
 * for the life of the process: a store opened after another compiles nothing (building
 * and compiling the 500-row enqueue INSERT with Kysely costs ~4–20 ms, a tenth of a
 * 10,000-line enqueue into a fresh store).
 */
type CompiledByStatement = Map<Statement<unknown>, Map<number, CompiledStatement>>;
const compiledByDialect = new WeakMap<object, Map<string, CompiledByStatement>>();

function sharedCompiled(
  db: Kysely<Database>,
  capabilities: Capabilities,
  schema: string | undefined,
): CompiledByStatement {
  // The adapter's class names the dialect (SQLite's or PostgreSQL's compiler).
  const dialect = db.getExecutor().adapter.constructor;
  let byCapabilities = compiledByDialect.get(dialect);
  if (byCapabilities === undefined) {
    byCapabilities = new Map();
    compiledByDialect.set(dialect, byCapabilities);
  }
  const key = `${capabilities.skipLocked}/${capabilities.maxParameters}/${schema ?? ''}`;
  let compiled = byCapabilities.get(key);
  if (compiled === undefined) {
    compiled = new Map();
    byCapabilities.set(key, compiled);
  }
  return compiled;
}

/** Where an executor gets a statement's compiled text and binder. */
export interface StatementSource {
  get(statement: Statement<unknown>, arity: number): CompiledStatement;
}

/**
 * Caches compiled statements per `(statement, arity)`, shared by the stores of one
 * dialect and schema (PostgreSQL's statements name `schema.table`).
 */
export class StatementCache implements StatementSource {
  readonly #db: Kysely<Database>;
  readonly #capabilities: Capabilities;
  readonly #schema: string | undefined;
  readonly #compiled: CompiledByStatement;
  constructor(db: Kysely<Database>, capabilities: Capabilities, schema?: string) {
    this.#db = db;
    this.#capabilities = capabilities;
    this.#schema = schema;
    this.#compiled = sharedCompiled(db, capabilities, schema);
  }
  get(statement: Statement<unknown>, arity: number): CompiledStatement {
    let byArity = this.#compiled.get(statement);
    if (byArity === undefined) {
      byArity = new Map();
      this.#compiled.set(statement, byArity);
    }
    let compiled = byArity.get(arity);
    if (compiled === undefined) {
      compiled = compileStatement(this.#db, this.#capabilities, statement, arity, this.#schema);
      byArity.set(arity, compiled);
    }
    return compiled;
  }
}

/** Runs prepared statements inside one open write transaction. */
export interface Executor {
  /** Rows of a SELECT or of an UPDATE/INSERT … RETURNING. */
  rows<Row>(statement: Statement<Row>, values: SlotValues, arity?: number): Promise<Row[]>;
  /** Number of rows an UPDATE/INSERT/DELETE changed. */
  changes(statement: Statement<unknown>, values: SlotValues, arity?: number): Promise<number>;
  /**
   * Hand-written SQL in the backend's own placeholder style (SQLite `?N`, PostgreSQL
   * `$N`): the maintenance operations' door (driver/driver.ts). Rows when the statement
   * returns any, and how many rows it changed.
   */
  query<Row>(
    text: string,
    parameters?: readonly unknown[],
  ): Promise<{ rows: Row[]; changes: number }>;
  /**
   * Runs `fn` inside a savepoint of the open transaction: released when `fn` resolves,
   * rolled back to (everything `fn` wrote undone, the rest of the transaction kept) and
   * the error rethrown when it throws.
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * The open transaction as a completion's `write(tx)` gets it (see {@link CompletionTx});
   * `close()` once the write returned, after which `tx` refuses every query.
   */
  completionTx(): { tx: CompletionTx; close(): void };
}
