import { MIGRATIONS } from '../../../migrations/index.ts';
import type { SchemaMap } from '../../driver.ts';
import type { Executor } from '../../executor.ts';
import { normalize } from '../../sql/schema.ts';

/**
 * The store's schema, and a scratch one the migrations build, read inside the caller's
 * transaction `x`; the scratch schema lives in a savepoint that is rolled back, so
 * nothing of it is ever committed.
 */
export async function schemas(x: Executor): Promise<[SchemaMap, SchemaMap]> {
  const live = x.dialect.schema as string;
  const scratch = `onceq_doctor_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await x.query('SAVEPOINT onceq_doctor');
  try {
    await x.query(`CREATE SCHEMA ${scratch}`);
    await x.query(`SET LOCAL search_path TO ${scratch}`);
    for (const migration of MIGRATIONS) {
      for (const statement of migration.statements.postgres) await x.query(statement);
    }
    return [await read(x, live), await read(x, scratch)];
  } finally {
    await x.query('ROLLBACK TO SAVEPOINT onceq_doctor');
  }
}

async function read(x: Executor, schema: string): Promise<SchemaMap> {
  const strip = (text: string) => normalize(text.split(`${schema}.`).join(''));
  const map: SchemaMap = new Map();
  const columns = await x.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    is_nullable: string;
    column_default: string | null;
  }>(
    `select table_name, column_name, data_type, is_nullable, column_default
     from information_schema.columns
     where table_schema = $1 and table_name not like 'onceq_migrations%'`,
    [schema],
  );
  for (const c of columns.rows) {
    map.set(`column ${c.table_name}.${c.column_name}`, {
      table: c.table_name,
      definition: `${c.data_type} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'} DEFAULT ${c.column_default ?? '-'}`,
    });
  }
  const constraints = await x.query<{ table_name: string; conname: string; def: string }>(
    `select t.relname as table_name, c.conname, pg_get_constraintdef(c.oid) as def
     from pg_constraint c join pg_class t on t.oid = c.conrelid
     join pg_namespace n on n.oid = t.relnamespace
     where n.nspname = $1 and t.relname not like 'onceq_migrations%'`,
    [schema],
  );
  for (const c of constraints.rows) {
    map.set(`constraint ${c.table_name}.${c.conname}`, {
      table: c.table_name,
      definition: strip(c.def),
    });
  }
  const indexes = await x.query<{ tablename: string; indexname: string; indexdef: string }>(
    `select tablename, indexname, indexdef from pg_indexes
     where schemaname = $1 and tablename not like 'onceq_migrations%'`,
    [schema],
  );
  for (const i of indexes.rows) {
    map.set(`index ${i.indexname}`, { table: i.tablename, definition: strip(i.indexdef) });
  }
  const triggers = await x.query<{ table_name: string; tgname: string; def: string }>(
    `select t.relname as table_name, g.tgname, pg_get_triggerdef(g.oid) as def
     from pg_trigger g join pg_class t on t.oid = g.tgrelid
     join pg_namespace n on n.oid = t.relnamespace
     where n.nspname = $1 and not g.tgisinternal`,
    [schema],
  );
  for (const g of triggers.rows) {
    map.set(`trigger ${g.table_name}.${g.tgname}`, {
      table: g.table_name,
      definition: strip(g.def),
    });
  }
  return map;
}
