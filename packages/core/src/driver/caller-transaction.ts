/**
 * Running onceq's statements inside a transaction the caller opened on the same
 * database (the outbox pattern: `enqueue(store, events, { transaction })`), so that what
 * onceq writes commits if and only if the caller's transaction commits.
 *
 * What a caller may pass (each backend accepts its own; see {@link CallerTransaction}):
 * the `tx` of `transaction(store, fn)` (both backends; the only one on SQLite), a Kysely
 * transaction or a `pg` client inside a transaction (PostgreSQL).
 *
 * onceq's statements run inside a SAVEPOINT of that transaction: when they fail (a
 * conflict, a refused id) the savepoint is rolled back, so nothing of them stays even if
 * the caller catches the error and commits; the error is rethrown, and a caller that
 * lets it propagate rolls back its own writes too. No retry happens here: the
 * transaction is the caller's, and so is the decision to run it again.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Executor } from './executor.ts';
import { logsItself, type RunSql } from './open-transactions.ts';
import type { SqlDialect, SqlText } from './sql-text.ts';

export type { CallerTransaction, PgClientLike } from './open-transactions.ts';

/** A Kysely transaction, told apart from a Kysely instance that is not in one. */
export function isKysely(value: unknown): value is Kysely<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Kysely<unknown>).executeQuery === 'function' &&
    typeof (value as Kysely<unknown>).isTransaction === 'boolean'
  );
}

/** Statements on a Kysely transaction: its own dialect's driver runs the text as compiled. */
export function kyselyRunner(trx: Kysely<unknown>): RunSql {
  if (!trx.isTransaction) {
    throw new TypeError(
      'enqueue: the transaction option needs an open Kysely transaction (db.transaction().execute(async (trx) => …)), not the Kysely instance',
    );
  }
  return async (sql, parameters) => {
    const result = await trx.executeQuery(CompiledQuery.raw(sql, [...parameters]));
    return { rows: [...result.rows], changes: Number(result.numAffectedRows ?? 0n) };
  };
}

/** The refusal for a value that is no transaction this backend can join. */
export function notATransaction(backend: string, accepted: string): TypeError {
  return new TypeError(`enqueue: the transaction option on a ${backend} store must be ${accepted}`);
}

const SAVEPOINT = 'onceq_enqueue';
const NESTED_SAVEPOINT = 'onceq_nested';

/**
 * Runs `fn` with an {@link Executor} on the caller's connection, inside a savepoint.
 * The dialect's statements name their tables themselves (PostgreSQL `schema.table`), so
 * nothing of the caller's session (its `search_path`) is read or changed.
 */
export async function inCallerTransaction<T>(
  run: RunSql,
  dialect: SqlDialect,
  fn: (x: Executor) => Promise<T>,
  onQuery?: (sql: string, parameters: readonly unknown[]) => void,
): Promise<T> {
  const log = logsItself(run) ? undefined : onQuery;
  const x: Executor = {
    dialect,
    query: async <Row>(statement: SqlText | string, parameters: readonly unknown[] = []) => {
      // Unnamed: the connection is the caller's, and so are its prepared statements.
      const text = typeof statement === 'string' ? statement : statement.sql;
      log?.(text, parameters);
      const result = await run(text, parameters);
      return { rows: result.rows as Row[], changes: result.changes };
    },
    savepoint: async (body) => {
      await run(`SAVEPOINT ${NESTED_SAVEPOINT}`, []);
      try {
        const result = await body();
        await run(`RELEASE SAVEPOINT ${NESTED_SAVEPOINT}`, []);
        return result;
      } catch (error) {
        await run(`ROLLBACK TO SAVEPOINT ${NESTED_SAVEPOINT}`, []);
        await run(`RELEASE SAVEPOINT ${NESTED_SAVEPOINT}`, []);
        throw error;
      }
    },
    // Only enqueue joins a caller's transaction; results are recorded in onceq's own.
    completionTx: () => {
      throw new TypeError("a handler's completion is recorded in onceq's own transaction");
    },
  };
  await run(`SAVEPOINT ${SAVEPOINT}`, []);
  try {
    const result = await fn(x);
    await run(`RELEASE SAVEPOINT ${SAVEPOINT}`, []);
    return result;
  } catch (error) {
    // Undoes onceq's writes; the caller's own writes stay theirs.
    await run(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`, []).catch(() => {});
    await run(`RELEASE SAVEPOINT ${SAVEPOINT}`, []).catch(() => {});
    throw error;
  }
}
