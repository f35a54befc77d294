import type { Compilable, CompiledQuery, Kysely, RawBuilder } from 'kysely';
import type { Database } from '../schema.ts';
import type { BackendCapabilities } from './backend.ts';

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
  readonly capabilities: BackendCapabilities;
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
  /** Unique per store: `<statement>/<arity>`, usable as a server-side statement name. */
  readonly name: string;
  readonly sql: string;
  readonly query: CompiledQuery;
  readonly bind: (values: SlotValues) => unknown[];
}

function compileStatement(
  db: Kysely<Database>,
  capabilities: BackendCapabilities,
  statement: Statement<unknown>,
  n: number,
): CompiledStatement {
  // A query builder's compile() takes no argument; a raw `sql` statement's takes the
  // Kysely instance (for its dialect). Passing it serves both.
  const built = statement.build({ db, p: slots, n, capabilities }) as {
    compile(db: Kysely<Database>): CompiledQuery;
  };
  const query = built.compile(db);
  const sources = query.parameters.map((parameter) =>
    parameter instanceof Slot ? parameter : { constant: parameter },
  );
  return {
    name: `onceq/${statement.name}/${n}`,
    sql: query.sql,
    query,
    bind: (values) =>
      sources.map((source) => {
        if (!(source instanceof Slot)) return source.constant;
        const value = values[source.name];
        if (value === undefined)
          throw new Error(`${statement.name}: no value for slot ${source.name}`);
        return source.index === null ? value : (value as readonly unknown[])[source.index];
      }),
  };
}

/** Caches compiled statements per `(statement, arity)` for one store. */
export class StatementCache {
  readonly #db: Kysely<Database>;
  readonly #capabilities: BackendCapabilities;
  readonly #compiled = new Map<Statement<unknown>, Map<number, CompiledStatement>>();
  constructor(db: Kysely<Database>, capabilities: BackendCapabilities) {
    this.#db = db;
    this.#capabilities = capabilities;
  }
  get(statement: Statement<unknown>, arity: number): CompiledStatement {
    let byArity = this.#compiled.get(statement);
    if (byArity === undefined) {
      byArity = new Map();
      this.#compiled.set(statement, byArity);
    }
    let compiled = byArity.get(arity);
    if (compiled === undefined) {
      compiled = compileStatement(this.#db, this.#capabilities, statement, arity);
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
}
