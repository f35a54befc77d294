/**
 * A Kysely bound to one open transaction of a store, for a completion's `write(tx)` and
 * `transaction(store, fn)`: its queries run on the connection that holds that
 * transaction, and it can neither begin nor end a transaction of its own (onceq's COMMIT
 * is the only one).
 */
import {
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  type Kysely as KyselyType,
  type QueryCompiler,
} from 'kysely';

/** The parts of a dialect a bound Kysely needs: how to compile, and what the SQL is. */
export interface DialectParts {
  createAdapter(): DialectAdapter;
  createQueryCompiler(): QueryCompiler;
}

/** Said when a user's write reaches past the transaction it was given. */
export const CLOSED_TX =
  'the transaction is over: use tx only while the function it was given to runs (write(tx), transaction(store, fn))';

function refuse(): never {
  throw new Error(
    "tx runs inside onceq's transaction: it cannot begin, commit or roll back one of its own",
  );
}

/**
 * A Kysely whose every query runs on `connection` while `isOpen()`; `db.transaction()`
 * and the like throw.
 */
export function boundKysely(
  parts: DialectParts,
  connection: DatabaseConnection,
  isOpen: () => boolean,
  // biome-ignore lint/suspicious/noExplicitAny: the user's own tables, typed by the user.
): KyselyType<any> {
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => {
      if (!isOpen()) throw new Error(CLOSED_TX);
      return connection;
    },
    beginTransaction: async () => refuse(),
    commitTransaction: async () => refuse(),
    rollbackTransaction: async () => refuse(),
    releaseConnection: async () => {},
    destroy: async () => {},
  };
  return new Kysely({
    dialect: {
      createAdapter: () => parts.createAdapter(),
      createDriver: () => driver,
      createQueryCompiler: () => parts.createQueryCompiler(),
      createIntrospector: () => refuse(),
    },
  });
}
