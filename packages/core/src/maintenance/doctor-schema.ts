/**
 * The doctor's schema checks: which migrations the store has, and whether its live schema
 * (tables, columns, CHECKs, foreign keys, indexes) is exactly what the migrations build.
 *
 * The reference is built, not hand-written: the backend runs the same migration statements
 * on a scratch database (`Driver.schemas`), so a new migration never needs a
 * second list here.
 */
import type { Store } from '../driver/backend.ts';
import { MIGRATIONS } from '../migrations/index.ts';
import type { Finding } from './doctor-types.ts';

/** Applied migrations vs the ones this code knows. */
export async function checkSchemaVersion(store: Store): Promise<{
  version: string | null;
  findings: Finding[];
}> {
  const applied = await store.read((x) => store.driver.appliedMigrations(x));
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

/**
 * Drift between the live schema and the one the migrations build, one finding per object.
 * Only onceq's own objects are compared: those of the tables (and views) the migrations
 * create, whatever belongs to them (columns, constraints, indexes, triggers). Tables of
 * the application's own in the same file or schema (which enqueue in your transaction and
 * completions need) are not onceq's to judge: they are named in one `info` line.
 */
export async function checkSchemaDrift(store: Store): Promise<Finding[]> {
  const [live, reference] = await store.transact((x) => store.driver.schemas(x));
  const owned = new Set([...reference.values()].map((object) => object.table));
  const findings: Finding[] = [];
  const drift = (message: string) =>
    findings.push({ check: 'schema_drift', severity: 'problem', message });
  for (const [key, { definition }] of reference) {
    const found = live.get(key)?.definition;
    if (found === undefined) drift(`missing ${key}: expected ${definition}`);
    else if (found !== definition) drift(`changed ${key}: expected ${definition}, found ${found}`);
  }
  const others = new Set<string>();
  for (const [key, { table, definition }] of live) {
    if (!owned.has(table)) others.add(table);
    else if (!reference.has(key)) drift(`unexpected ${key}: ${definition}`);
  }
  if (others.size > 0) {
    findings.push({
      check: 'schema_drift',
      severity: 'info',
      message: `tables and views that are not onceq's, not checked: ${[...others].sort().join(', ')}`,
    });
  }
  return findings;
}
