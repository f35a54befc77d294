import { Database as BunDatabase } from 'bun:sqlite';
import { Kysely, PostgresDialect } from 'kysely';
import { BunSqliteDialect } from '../driver/sqlite/dialect.ts';
import { isPostgresUrl } from '../open.ts';
import { migrateTo } from './index.ts';

/**
 * Creates a store as an earlier release left it: the migrations up to and including
 * `name` applied, none later (PostgreSQL: in `schema`, created here). For upgrade tests
 * and for trying an upgrade by hand; not part of the public API.
 */
export async function createStoreAt(target: string, name: string, schema?: string): Promise<void> {
  if (isPostgresUrl(target)) {
    const pg = (await import('pg')).default;
    const { SchemaScopedDialect } = await import('../driver/postgres/schema-scope.ts');
    const pool = new pg.Pool({ connectionString: target, max: 1 });
    const db = new Kysely<unknown>({
      dialect: schema ? new SchemaScopedDialect({ pool }, schema) : new PostgresDialect({ pool }),
    });
    try {
      if (schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await migrateTo(db, 'postgres', name, schema);
    } finally {
      await db.destroy();
    }
    return;
  }
  const raw = new BunDatabase(target, { create: true, readwrite: true, strict: false });
  raw.run('PRAGMA journal_mode = WAL');
  raw.run('PRAGMA foreign_keys = ON');
  const db = new Kysely<unknown>({
    dialect: new BunSqliteDialect({ database: raw, busyTimeoutMs: 5000, location: target }),
  });
  try {
    await migrateTo(db, 'sqlite', name);
  } finally {
    await db.destroy();
  }
}
