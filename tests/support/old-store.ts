/**
 * A store as an earlier release left it: the migrations up to `name` applied and no later
 * one, built with the real migration code (not hand-written SQL), for upgrade tests.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { createStoreAt } from '@onceq/core/testing';
import { SQL } from 'bun';

/** Creates the SQLite file `path` at migration `name`, then runs `fill` on a raw connection. */
export async function sqliteStoreAt(
  path: string,
  name: string,
  fill: (raw: BunDatabase) => void,
): Promise<void> {
  await createStoreAt(path, name);
  const raw = new BunDatabase(path);
  try {
    fill(raw);
  } finally {
    raw.close();
  }
}

/** Creates schema `schema` of the PostgreSQL database `url` at migration `name`, then runs `fill`. */
export async function postgresStoreAt(
  url: string,
  schema: string,
  name: string,
  fill: (db: SQL) => Promise<void>,
): Promise<void> {
  await createStoreAt(url, name, schema);
  const db = new SQL(url);
  try {
    await fill(db);
  } finally {
    await db.close();
  }
}
