/**
 * The doctor's schema checks: which migrations the store has, and whether its live schema
 * (tables, columns, CHECKs, foreign keys, indexes) is exactly what the migrations build.
 *
 * The reference is built, not hand-written: the same migration statements run on a scratch
 * database (SQLite: an in-memory database; PostgreSQL: a scratch schema inside a
 * transaction that is rolled back), so a new migration never needs a second list here.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { sql } from 'kysely';
import type { Store } from '../driver/backend.ts';
import { MIGRATIONS } from '../migrations/index.ts';
import type { Finding } from './doctor-types.ts';

/** Applied migrations vs the ones this code knows. */
export async function checkSchemaVersion(store: Store): Promise<{
  version: string | null;
  findings: Finding[];
}> {
  const { rows } = await sql<{
    name: string;
  }>`select name from onceq_migrations order by name`.execute(store.db);
  const applied = rows.map((r) => r.name);
  const known = MIGRATIONS.map((m) => m.name);
  const findings: Finding[] = [];
  const missing = known.filter((n) => !applied.includes(n));
  const unknown = applied.filter((n) => !known.includes(n));
  if (missing.length > 0) {
    findings.push({
      check: 'schema_version',
      severity: 'problem',
      message: `migrations not applied: ${missing.join(', ')}`,
    });
  }
  if (unknown.length > 0) {
    findings.push({
      check: 'schema_version',
      severity: 'problem',
      message: `the store has migrations this onceq does not know (a newer release made it?): ${unknown.join(', ')}`,
    });
  }
  return { version: applied.at(-1) ?? null, findings };
}

/** One schema object as compared: `kind:table.name` → its normalized definition. */
type SchemaMap = Map<string, string>;

/** Drift between the live schema and the one the migrations build, one finding per object. */
export async function checkSchemaDrift(store: Store): Promise<Finding[]> {
  const [live, reference] =
    store.kind === 'sqlite'
      ? [await sqliteSchema(store), referenceSqliteSchema()]
      : await postgresSchemas(store);
  const findings: Finding[] = [];
  const drift = (message: string) =>
    findings.push({ check: 'schema_drift', severity: 'problem', message });
  for (const [key, definition] of reference) {
    const found = live.get(key);
    if (found === undefined) drift(`missing ${key}: expected ${definition}`);
    else if (found !== definition) drift(`changed ${key}: expected ${definition}, found ${found}`);
  }
  for (const [key, definition] of live) {
    if (!reference.has(key)) drift(`unexpected ${key}: ${definition}`);
  }
  return findings;
}

const normalize = (text: string) => text.replace(/\s+/g, ' ').trim();

const SQLITE_OBJECTS = `SELECT type, name, sql FROM sqlite_master
  WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'onceq_migrations%' AND sql IS NOT NULL`;

async function sqliteSchema(store: Store): Promise<SchemaMap> {
  const { rows } = await sql<{ type: string; name: string; sql: string }>`${sql.raw(
    SQLITE_OBJECTS,
  )}`.execute(store.db);
  return new Map(rows.map((r) => [`${r.type} ${r.name}`, normalize(r.sql)]));
}

function referenceSqliteSchema(): SchemaMap {
  const db = new BunDatabase(':memory:');
  try {
    db.run('PRAGMA foreign_keys = ON');
    for (const migration of MIGRATIONS) {
      for (const statement of migration.statements.sqlite) db.run(statement);
    }
    const rows = db.query<{ type: string; name: string; sql: string }, []>(SQLITE_OBJECTS).all();
    return new Map(rows.map((r) => [`${r.type} ${r.name}`, normalize(r.sql)]));
  } finally {
    db.close();
  }
}

class Rollback extends Error {
  constructor(readonly schemas: [SchemaMap, SchemaMap]) {
    super('rollback');
  }
}

/** The live schema and a scratch one built by the migrations, read in one rolled-back transaction. */
async function postgresSchemas(store: Store): Promise<[SchemaMap, SchemaMap]> {
  const scratch = `onceq_doctor_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  try {
    await store.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
        trx,
      );
      const live = (rows[0] as { schema: string }).schema;
      await sql.raw(`CREATE SCHEMA ${scratch}`).execute(trx);
      await sql.raw(`SET LOCAL search_path TO ${scratch}`).execute(trx);
      for (const migration of MIGRATIONS) {
        for (const statement of migration.statements.postgres)
          await sql.raw(statement).execute(trx);
      }
      const read = async (schema: string): Promise<SchemaMap> => {
        const strip = (text: string) => normalize(text.split(`${schema}.`).join(''));
        const map: SchemaMap = new Map();
        const columns = await sql<{
          table_name: string;
          column_name: string;
          data_type: string;
          is_nullable: string;
          column_default: string | null;
        }>`select table_name, column_name, data_type, is_nullable, column_default
           from information_schema.columns
           where table_schema = ${schema} and table_name not like 'onceq_migrations%'`.execute(trx);
        for (const c of columns.rows) {
          map.set(
            `column ${c.table_name}.${c.column_name}`,
            `${c.data_type} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'} DEFAULT ${c.column_default ?? '-'}`,
          );
        }
        const constraints = await sql<{ table_name: string; conname: string; def: string }>`
          select t.relname as table_name, c.conname, pg_get_constraintdef(c.oid) as def
          from pg_constraint c join pg_class t on t.oid = c.conrelid
          join pg_namespace n on n.oid = t.relnamespace
          where n.nspname = ${schema} and t.relname not like 'onceq_migrations%'`.execute(trx);
        for (const c of constraints.rows) {
          map.set(`constraint ${c.table_name}.${c.conname}`, strip(c.def));
        }
        const indexes = await sql<{ indexname: string; indexdef: string }>`
          select indexname, indexdef from pg_indexes
          where schemaname = ${schema} and tablename not like 'onceq_migrations%'`.execute(trx);
        for (const i of indexes.rows) map.set(`index ${i.indexname}`, strip(i.indexdef));
        return map;
      };
      throw new Rollback([await read(live), await read(scratch)]);
    });
  } catch (error) {
    if (error instanceof Rollback) return error.schemas;
    throw error;
  }
  throw new Error('unreachable: the doctor transaction always rolls back');
}
