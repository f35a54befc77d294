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

/** Drift between the live schema and the one the migrations build, one finding per object. */
export async function checkSchemaDrift(store: Store): Promise<Finding[]> {
  const [live, reference] = await store.transact((x) => store.driver.schemas(x));
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
