/**
 * Fresh PostgreSQL schemas for the test factories without migrating one per test.
 * Migrating a new schema runs every migration's DDL (hundreds of catalog writes); most
 * tests leave their schema exactly as the migrations built it and only add a few rows.
 * Such a schema is emptied back to the rows a new store holds and handed to the next
 * test; any other (a dropped constraint or trigger, a table or index of the test's own,
 * changed storage options or rights, tables analyzed or vacuumed, more than a few
 * megabytes of rows) is dropped, as every schema used to be.
 *
 * "Exactly as built" is compared with a reference schema migrated once per process: its
 * shape (tables, columns and defaults, constraints, indexes, triggers and whether they
 * fire, functions, views, storage options, rights, and the planner statistics kept on
 * its tables) with the schema's name taken out, and its rows. A schema that passed
 * that comparison is checked again more cheaply: its catalog rows must be the same rows.
 */
import { openStore } from '@onceq/core';
import { SQL } from 'bun';

interface Reference {
  shape: string;
  /** The rows a new store's tables hold (the migrations' own, the id policy, counters). */
  rows: { table: string; json: string }[];
}

/** A schema ready for a test, with the stamp of its catalog rows when it was checked. */
interface Spare {
  schema: string;
  stamp: string;
}

const references = new Map<string, Promise<Reference>>();
const spares = new Map<string, Spare[]>();
/** The stamp of each schema handed out from the spares, by name. */
const handedOut = new Map<string, string>();

const admins = new Map<string, SQL>();

/**
 * One connection per server for the whole test process, kept open: its catalog caches
 * stay warm, so checking and emptying a schema does not pay a new backend's cold start.
 */
function adminOf(url: string): SQL {
  let admin = admins.get(url);
  if (admin === undefined) {
    admin = new SQL({ url, max: 1 });
    admins.set(url, admin);
  }
  return admin;
}

function newSchemaName(): string {
  return `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** A schema for a new test store on `url`: an emptied one left by an earlier test, or a new name. */
export async function takeSchema(url: string): Promise<string> {
  await referenceOf(url);
  const spare = spares.get(url)?.pop();
  if (spare === undefined) return newSchemaName();
  handedOut.set(spare.schema, spare.stamp);
  return spare.schema;
}

/** At the end of the test process: drops every spare schema and closes the admin connections. */
export async function dropSpareSchemas(): Promise<void> {
  for (const [url, list] of spares) {
    const admin = adminOf(url);
    for (const { schema } of list.splice(0)) {
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  }
  for (const admin of admins.values()) await admin.close();
  admins.clear();
}

/** How many emptied schemas wait for a test on `url`. */
export function spareCount(url: string): number {
  return spares.get(url)?.length ?? 0;
}

/**
 * After the test's store is closed: empties `schema` for the next test when it is still
 * as the migrations built it, else drops it. Resolves with what it did.
 *
 * A schema handed out from the spares was compared with the reference before; it is
 * unchanged when its catalog rows are the very rows it had then (any DDL or GRANT
 * writes new ones) and its tables were never analyzed or vacuumed. A new schema is
 * compared with the reference in full, once.
 */
export async function giveBackSchema(url: string, schema: string): Promise<'reused' | 'dropped'> {
  const reference = await referenceOf(url);
  const before = handedOut.get(schema);
  handedOut.delete(schema);
  const admin = adminOf(url);
  const unchanged =
    before !== undefined
      ? (await stampOf(admin, schema)) === before
      : (await shapeOf(admin, schema)) === reference.shape;
  if (unchanged && (await emptySchema(admin, schema, reference))) {
    const list = spares.get(url) ?? [];
    list.push({ schema, stamp: before ?? (await stampOf(admin, schema)) });
    spares.set(url, list);
    return 'reused';
  }
  await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  return 'dropped';
}

function referenceOf(url: string): Promise<Reference> {
  let reference = references.get(url);
  if (reference === undefined) {
    reference = buildReference(url);
    references.set(url, reference);
  }
  return reference;
}

/** Migrates one schema the way a test's `openStore` would, records it, and keeps it as the first spare. */
async function buildReference(url: string): Promise<Reference> {
  const schema = newSchemaName();
  const store = await openStore(url, { schema });
  await store.close();
  const admin = adminOf(url);
  const shape = await shapeOf(admin, schema);
  const rows: Reference['rows'] = [];
  for (const table of await tablesOf(admin, schema)) {
    const [row] = await admin.unsafe(
      `SELECT coalesce(json_agg(t), '[]')::text AS json FROM "${schema}"."${table}" t`,
    );
    const json = (row as { json: string }).json;
    if (json !== '[]') rows.push({ table, json });
  }
  spares.set(url, [{ schema, stamp: await stampOf(admin, schema) }]);
  return { shape, rows };
}

/**
 * Which catalog rows describe the schema: every row's identity and the transaction that
 * wrote it (`xmin`), for the schema, its relations, columns, defaults, constraints,
 * indexes, triggers and functions, plus the count of analyzes and vacuums of its tables.
 * DDL and GRANT write catalog rows, so any of them changes the stamp; row writes do not.
 */
async function stampOf(admin: SQL, schema: string): Promise<string> {
  const [row] = await admin.unsafe(
    `WITH ns AS (SELECT oid, xmin FROM pg_namespace WHERE nspname = $1),
     rel AS (SELECT c.oid, c.xmin FROM pg_class c JOIN ns ON c.relnamespace = ns.oid),
     parts AS (
       SELECT 'n' || oid || ':' || xmin AS part FROM ns
       UNION ALL SELECT 'c' || oid || ':' || xmin FROM rel
       UNION ALL SELECT 'a' || a.attrelid || '.' || a.attnum || ':' || a.xmin
         FROM pg_attribute a JOIN rel ON a.attrelid = rel.oid
       UNION ALL SELECT 'd' || d.oid || ':' || d.xmin FROM pg_attrdef d JOIN rel ON d.adrelid = rel.oid
       UNION ALL SELECT 'k' || k.oid || ':' || k.xmin FROM pg_constraint k JOIN ns ON k.connamespace = ns.oid
       UNION ALL SELECT 'i' || i.indexrelid || ':' || i.xmin FROM pg_index i JOIN rel ON i.indrelid = rel.oid
       UNION ALL SELECT 't' || t.oid || ':' || t.xmin FROM pg_trigger t JOIN rel ON t.tgrelid = rel.oid
       UNION ALL SELECT 'p' || p.oid || ':' || p.xmin FROM pg_proc p JOIN ns ON p.pronamespace = ns.oid
       UNION ALL SELECT 's' || sum(pg_stat_get_analyze_count(oid) + pg_stat_get_autoanalyze_count(oid)
                                   + pg_stat_get_vacuum_count(oid) + pg_stat_get_autovacuum_count(oid))
         FROM rel
     )
     SELECT md5(string_agg(part, ',' ORDER BY part)) AS stamp FROM parts`,
    [schema],
  );
  return (row as { stamp: string }).stamp;
}

async function tablesOf(admin: SQL, schema: string): Promise<string[]> {
  const rows = await admin.unsafe(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`,
    [schema],
  );
  return (rows as { relname: string }[]).map((r) => r.relname);
}

/** Bytes a schema may hold and still be emptied for reuse: beyond it, dropping is cheaper. */
const REUSE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Every table back to the reference's rows, in one transaction, as the server's replica
 * role (no triggers, no foreign-key checks: counters and keys are restored as rows).
 * DELETE, not TRUNCATE: TRUNCATE makes new files for every table and index, which costs
 * nearly what migrating a new schema does. Resolves false (nothing changed) when the
 * schema holds too much or the role may not take the replica role: the caller drops it.
 */
async function emptySchema(admin: SQL, schema: string, reference: Reference): Promise<boolean> {
  const tables = await tablesOf(admin, schema);
  const [size] = await admin.unsafe(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
    [schema],
  );
  if (Number((size as { bytes: string | number }).bytes) > REUSE_MAX_BYTES) return false;
  try {
    await admin.begin(async (tx) => {
      await tx.unsafe('SET LOCAL session_replication_role = replica');
      for (const table of tables) await tx.unsafe(`DELETE FROM "${schema}"."${table}"`);
      for (const { table, json } of reference.rows) {
        await tx.unsafe(
          `INSERT INTO "${schema}"."${table}"
           SELECT * FROM json_populate_recordset(NULL::"${schema}"."${table}", ($1::text)::json)`,
          [json],
        );
      }
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * The schema's shape as text with its own name taken out: what two schemas built by the
 * same migrations and used only through their rows have in common, and what any other
 * change to them (DDL, rights, storage options, statistics) breaks.
 */
async function shapeOf(admin: SQL, schema: string): Promise<string> {
  const [row] = await admin.unsafe(
    `WITH ns AS (SELECT oid, nspacl FROM pg_namespace WHERE nspname = $1),
     parts AS (
       SELECT 'schema ' || coalesce(nspacl::text, '') AS part FROM ns
       UNION ALL
       SELECT format('rel %s %s %s %s %s', c.relname, c.relkind, coalesce(c.reloptions::text, ''),
                     coalesce(c.relacl::text, ''), c.relrowsecurity)
         FROM pg_class c JOIN ns ON c.relnamespace = ns.oid
       UNION ALL
       SELECT format('col %s %s %s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                     a.attnotnull, coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attstattarget)
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON c.relnamespace = ns.oid
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attnum > 0 AND NOT a.attisdropped
       UNION ALL
       SELECT format('con %s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN ns ON c.relnamespace = ns.oid
       UNION ALL
       SELECT format('idx %s', pg_get_indexdef(i.indexrelid))
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN ns ON c.relnamespace = ns.oid
       UNION ALL
       SELECT format('trg %s %s %s', t.tgname, t.tgenabled, pg_get_triggerdef(t.oid))
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN ns ON c.relnamespace = ns.oid
        WHERE NOT t.tgisinternal
       UNION ALL
       SELECT format('fn %s %s %s %s', p.proname, pg_get_function_identity_arguments(p.oid),
                     md5(replace(p.prosrc, $1, '§')), coalesce(p.proacl::text, ''))
         FROM pg_proc p JOIN ns ON p.pronamespace = ns.oid
       UNION ALL
       SELECT format('view %s %s', c.relname, pg_get_viewdef(c.oid))
         FROM pg_class c JOIN ns ON c.relnamespace = ns.oid WHERE c.relkind IN ('v', 'm')
       UNION ALL
       SELECT format('stats %s %s %s', s.relname,
                     s.analyze_count + s.autoanalyze_count + s.vacuum_count + s.autovacuum_count,
                     c.reltuples >= 0)
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.schemaname = $1
     )
     SELECT replace(string_agg(part, E'\\n' ORDER BY part), $1, '§') AS shape FROM parts`,
    [schema],
  );
  return (row as { shape: string }).shape;
}
