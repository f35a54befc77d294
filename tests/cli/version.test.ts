/**
 * `onceq --version` reads the store's schema version and changes nothing: no SQLite file,
 * no PostgreSQL schema or table, no migration of an older store (it used to open the
 * store, which creates and migrates).
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_VERSION } from '@onceq/core/internal';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';
import { cliSandbox, DEMO_JSONL } from '../support/cli.ts';
import { postgresStoreAt, sqliteStoreAt } from '../support/old-store.ts';
import { scratchDatabase } from '../support/pg-database.ts';

const migrationsOf = (path: string) => {
  const raw = new BunDatabase(path, { readonly: true });
  try {
    return raw.query('SELECT count(*) AS n FROM onceq_migrations').get() as { n: number };
  } finally {
    raw.close();
  }
};

describe('SQLite: --version never creates or migrates a store', () => {
  test('a missing --db file: "no store", exit 0, no file', async () => {
    const box = cliSandbox();
    try {
      for (const flag of ['--version', '-v']) {
        const r = await box.run([flag, '--db', 'missing.db']);
        expect([r.code, r.stderr]).toEqual([0, '']);
        expect(r.stdout).toBe(
          `onceq 0.1.0 (schema version ${SCHEMA_VERSION})\nstore: no store at ${join(box.cwd, 'missing.db')}\n`,
        );
      }
      const json = await box.run(['--version', '--json', '--db', 'missing.db']);
      expect(JSON.parse(json.stdout)).toEqual({
        version: '0.1.0',
        schema: SCHEMA_VERSION,
        store_schema: null,
      });
      expect(existsSync(join(box.cwd, 'missing.db'))).toBe(false);
      // The default store too, and after a command name.
      expect((await box.run(['status', '--version'])).code).toBe(0);
      expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
    } finally {
      box.cleanup();
    }
  });

  test('a store of an earlier release: its version is printed and it stays at it', async () => {
    const box = cliSandbox();
    try {
      const path = join(box.cwd, 'old.db');
      await sqliteStoreAt(path, '0002_lease_index_partial', () => {});
      const r = await box.run(['--version', '--db', 'old.db']);
      expect(r.stdout).toEndWith('\nstore: schema version 2\n');
      expect(migrationsOf(path).n).toBe(2);
      // A file that is not an onceq store is named as such, and left as it was.
      writeFileSync(join(box.cwd, 'other.db'), '');
      const other = await box.run(['--version', '--json', '--db', 'other.db']);
      expect(JSON.parse(other.stdout).store_schema).toBeNull();
      expect(Bun.file(join(box.cwd, 'other.db')).size).toBe(0);
    } finally {
      box.cleanup();
    }
  });
});

const pg = scratchDatabase('version');
describePostgres('PostgreSQL: --version never creates a schema or a table', () => {
  beforeAll(() => pg.create());
  afterAll(() => pg.drop());

  const schemas = async (): Promise<string[]> => {
    const db = new SQL(pg.url);
    try {
      const rows = await db`SELECT schema_name FROM information_schema.schemata
          WHERE schema_name = 'onceq'`;
      return rows.map((r: { schema_name: string }) => r.schema_name);
    } finally {
      await db.close();
    }
  };

  test('an empty database: "schema version none", no schema onceq afterwards', async () => {
    const box = cliSandbox();
    try {
      const r = await box.run(['--version', '--db', pg.url]);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toEndWith('\nstore: schema version none\n');
      const json = await box.run(['-v', '--json', '--db', pg.url]);
      expect(JSON.parse(json.stdout).store_schema).toBeNull();
      expect(await schemas()).toEqual([]);
    } finally {
      box.cleanup();
    }
  });

  test('a store of an earlier release keeps its version; a current one reports it', async () => {
    const box = cliSandbox();
    try {
      await postgresStoreAt(pg.url, 'onceq', '0002_lease_index_partial', async () => {});
      const old = await box.run(['--version', '--db', pg.url]);
      expect(old.stdout).toEndWith('\nstore: schema version 2\n');
      const db = new SQL(pg.url);
      try {
        const [row] = await db`SELECT count(*)::int AS n FROM onceq.onceq_migrations`;
        expect(row.n).toBe(2);
      } finally {
        await db.close();
      }
      expect((await box.run(['enqueue', DEMO_JSONL, '--db', pg.url])).code).toBe(0);
      const current = await box.run(['--version', '--json', '--db', pg.url]);
      expect(JSON.parse(current.stdout).store_schema).toBe(SCHEMA_VERSION);
    } finally {
      await pg.reset();
      box.cleanup();
    }
  });
});
