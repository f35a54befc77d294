import {
  type CallerTransaction,
  isKysely,
  kyselyRunner,
  notATransaction,
  type PgClientLike,
  type RunSql,
} from '../caller-transaction.ts';

/**
 * The caller's PostgreSQL transaction as a {@link RunSql} (a Kysely transaction, or a
 * `pg` client after `BEGIN`), and the hooks that point `search_path` at the store's
 * schema for onceq's statements (which name their tables unqualified) and back to the
 * caller's own, local to the transaction. A savepoint outside a transaction block is an
 * error on PostgreSQL, so a client that never began one is refused by the server.
 */
export function postgresCaller(
  within: CallerTransaction,
  schema: string,
): { run: RunSql; hooks: { enter: () => Promise<void>; leave: () => Promise<void> } } {
  let run: RunSql;
  if (isKysely(within)) run = kyselyRunner(within);
  else if (typeof (within as PgClientLike).query === 'function') {
    const client = within as PgClientLike;
    run = async (sql, parameters) => {
      const result = await client.query(sql, [...parameters]);
      return { rows: result.rows, changes: result.rowCount ?? 0 };
    };
  } else {
    throw notATransaction('PostgreSQL', 'a Kysely transaction or a pg client after BEGIN');
  }
  let saved = '';
  return {
    run,
    hooks: {
      async enter() {
        const { rows } = await run("SELECT current_setting('search_path') AS path", []);
        saved = (rows[0] as { path: string }).path;
        await run("SELECT set_config('search_path', $1, true)", [schema]);
      },
      async leave() {
        await run("SELECT set_config('search_path', $1, true)", [saved]);
      },
    },
  };
}
