import { Database as BunDatabase } from 'bun:sqlite';
import { MIGRATIONS } from '../../../migrations/index.ts';
import type { SchemaMap } from '../../driver.ts';
import type { Executor } from '../../executor.ts';
import { normalize } from '../../sql/schema.ts';

const OBJECTS = `SELECT type, name, tbl_name, sql FROM sqlite_master
  WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'onceq_migrations%' AND sql IS NOT NULL`;

type ObjectRow = { type: string; name: string; tbl_name: string; sql: string };

const toMap = (rows: readonly ObjectRow[]): SchemaMap =>
  new Map(
    rows.map((r) => [`${r.type} ${r.name}`, { table: r.tbl_name, definition: normalize(r.sql) }]),
  );

/** The store's `sqlite_master`, and the one the migrations build in an in-memory database. */
export async function schemas(x: Executor): Promise<[SchemaMap, SchemaMap]> {
  const live = toMap((await x.query<ObjectRow>(OBJECTS)).rows);
  const db = new BunDatabase(':memory:');
  try {
    db.run('PRAGMA foreign_keys = ON');
    for (const migration of MIGRATIONS) {
      for (const statement of migration.statements.sqlite) db.run(statement);
    }
    return [live, toMap(db.query<ObjectRow, []>(OBJECTS).all())];
  } finally {
    db.close();
  }
}
