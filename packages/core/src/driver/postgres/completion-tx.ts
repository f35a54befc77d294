/**
 * What a user's completion gets on PostgreSQL: the pooled client that holds the ACK's
 * transaction, as {@link CompletionTx}, and the savepoint its write runs in.
 */
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Kysely,
  PostgresAdapter,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import type pg from 'pg';
import type { CompletionTx } from '../../handler/contract.ts';
import type { OpenStoreOptions } from '../backend.ts';
import { boundKysely, CLOSED_TX } from '../bound-kysely.ts';

/** Runs `body` inside a savepoint of the client's open transaction. */
export async function withSavepoint<T>(client: pg.PoolClient, body: () => Promise<T>): Promise<T> {
  await client.query('SAVEPOINT onceq_completion');
  try {
    const result = await body();
    await client.query('RELEASE SAVEPOINT onceq_completion');
    return result;
  } catch (error) {
    await client.query('ROLLBACK TO SAVEPOINT onceq_completion');
    await client.query('RELEASE SAVEPOINT onceq_completion');
    throw error;
  }
}

const POSTGRES_DIALECT = {
  createAdapter: () => new PostgresAdapter(),
  createQueryCompiler: () => new PostgresQueryCompiler(),
};

/** The client's open transaction as a completion's `write(tx)` gets it. */
export function completionTx(
  client: pg.PoolClient,
  onQuery: OpenStoreOptions['onQuery'],
): { tx: CompletionTx; close(): void } {
  let open = true;
  const run = async (text: string, params: readonly unknown[]) => {
    if (!open) throw new Error(CLOSED_TX);
    onQuery?.(text, params);
    const result = await client.query(text, [...params]);
    return { rows: result.rows as Record<string, unknown>[], rowCount: result.rowCount ?? 0 };
  };
  const connection: DatabaseConnection = {
    executeQuery: async <R>(compiled: CompiledQuery): Promise<QueryResult<R>> => {
      const { rows, rowCount } = await run(compiled.sql, compiled.parameters);
      return { rows: rows as R[], numAffectedRows: BigInt(rowCount) };
    },
    // biome-ignore lint/correctness/useYield: a completion's Kysely does not stream.
    async *streamQuery() {
      throw new Error("a completion's Kysely does not stream");
    },
  };
  // biome-ignore lint/suspicious/noExplicitAny: the user's own tables, typed by the user.
  let db: Kysely<any> | undefined;
  const tx: CompletionTx = {
    kind: 'postgres',
    query: (text, params = []) => run(text, params),
    get db() {
      db ??= boundKysely(POSTGRES_DIALECT, connection, () => open);
      return db;
    },
  };
  return { tx, close: () => (open = false) };
}
