/**
 * `doctor`: checks a store and says what is wrong, one finding per problem. Usable as a
 * deploy gate (`onceq doctor --json`, non-zero exit on a problem).
 */
import { sql } from 'kysely';
import type { Store } from '../driver/backend.ts';
import { type CounterDrift, findCounterDrift, recomputeCounters } from './counters.ts';
import { checkIdPolicy, checkInvariants, checkStaleLeases } from './doctor-invariants.ts';
import { checkSchemaDrift, checkSchemaVersion } from './doctor-schema.ts';
import type { DoctorReport, Finding } from './doctor-types.ts';

export interface DoctorOptions {
  /**
   * Repair what is safe to repair: recompute the maintained counters (`status`'s
   * numbers, derived data) from real counts when they drifted, and on PostgreSQL run
   * `ANALYZE` on a table whose planner statistics are missing or far off. Default false.
   * Nothing else is ever changed: a broken invariant needs a person.
   */
  fix?: boolean;
  /** A lease expired this long ago is reported (warning). Default 3600 s. */
  staleLeaseSeconds?: number;
  /**
   * PostgreSQL: a table of at least this many rows whose statistics are missing, or count
   * under half of its rows, is a problem (slow plans after a large load). Default 1000.
   */
  statisticsMinRows?: number;
}

/**
 * Runs every check, in this order: schema version, schema drift (tables, columns,
 * CHECKs, foreign keys, indexes against what the migrations build), SQLite's
 * `integrity_check` and `foreign_key_check`, the id policy, the protocol invariants,
 * the maintained counters against real counts, stale leases, PostgreSQL planner
 * statistics. Reads only, except `fix`.
 */
export async function doctor(store: Store, options: DoctorOptions = {}): Promise<DoctorReport> {
  const checks: string[] = [];
  const findings: Finding[] = [];
  // A check that throws (a corrupt page, a missing table) is a problem of its own; the
  // other checks still run.
  const run = async (name: string, check: () => Promise<Finding[]>) => {
    checks.push(name);
    try {
      findings.push(...(await check()));
    } catch (error) {
      const why = (error as Error).message.replace(/\s+/g, ' ');
      findings.push({ check: name, severity: 'problem', message: `the check failed: ${why}` });
    }
  };
  let version: string | null = null;
  await run('schema_version', async () => {
    const result = await checkSchemaVersion(store);
    version = result.version;
    return result.findings;
  });
  await run('schema_drift', () => checkSchemaDrift(store));
  if (store.kind === 'sqlite') {
    await run('integrity_check', () => sqliteIntegrity(store));
    await run('foreign_key_check', () => sqliteForeignKeys(store));
  }
  await run('id_policy', () => checkIdPolicy(store));
  await run('invariants', () => checkInvariants(store));
  await run('counters', () => checkCounters(store, options.fix === true));
  await run('stale_leases', () => checkStaleLeases(store, options.staleLeaseSeconds ?? 3600));
  if (store.kind === 'postgres') {
    await run('statistics', () =>
      postgresStatistics(store, options.statisticsMinRows ?? 1000, options.fix === true),
    );
  }
  return {
    healthy: findings.every((f) => f.severity !== 'problem' || f.fixed === true),
    kind: store.kind,
    location: store.location,
    schemaVersion: version,
    checks,
    findings,
  };
}

/**
 * `status` reads counters kept by triggers (migration 0004); they must equal what the
 * rows say. A drift is a problem; `fix` recomputes them and checks again.
 */
async function checkCounters(store: Store, fix: boolean): Promise<Finding[]> {
  const drift = await findCounterDrift(store);
  if (drift.length === 0) return [];
  let fixed = false;
  if (fix) {
    await recomputeCounters(store);
    fixed = (await findCounterDrift(store)).length === 0;
  }
  return [
    {
      check: 'counters',
      severity: 'problem',
      message: `the counters status reads disagree with the rows: ${drift.map(describeDrift).join(', ')}${fixed ? '; fixed by recomputing them' : ' (onceq doctor --fix recomputes them)'}`,
      ...(fix ? { fixed } : {}),
    },
  ];
}

function describeDrift(d: CounterDrift): string {
  const what = d.kind === 'state' ? `${d.key} messages` : `effects of category ${d.key}`;
  const money = d.kind === 'effect' ? ` (sum ${d.stored.total}, really ${d.actual.total})` : '';
  return `${what} counted ${d.stored.n}, really ${d.actual.n}${money}`;
}

async function sqliteIntegrity(store: Store): Promise<Finding[]> {
  const { rows } = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(store.db);
  const lines = rows.map((r) => r.integrity_check);
  if (lines.length === 1 && lines[0] === 'ok') return [];
  return [
    {
      check: 'integrity_check',
      severity: 'problem',
      message: `SQLite integrity_check: ${lines.slice(0, 5).join('; ')}${lines.length > 5 ? '; …' : ''}`,
    },
  ];
}

async function sqliteForeignKeys(store: Store): Promise<Finding[]> {
  const { rows } = await sql<{ table: string; rowid: number; parent: string }>`
    PRAGMA foreign_key_check`.execute(store.db);
  if (rows.length === 0) return [];
  return [
    {
      check: 'foreign_key_check',
      severity: 'problem',
      message: `SQLite foreign_key_check: ${rows.length} row${rows.length === 1 ? '' : 's'} point at a missing parent (${rows
        .slice(0, 5)
        .map((r) => `${r.table} rowid ${r.rowid} → ${r.parent}`)
        .join(', ')})`,
    },
  ];
}

/**
 * Planner statistics after a large load: `reltuples` is -1 until the table is first
 * analyzed (PostgreSQL 14+), and far below the real count after a bulk load that
 * autovacuum has not caught up with. Compared with an exact count.
 */
async function postgresStatistics(store: Store, minRows: number, fix: boolean): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const table of ['messages', 'effects'] as const) {
    const stale = async () => {
      const { rows } = await sql<{ estimate: number; actual: number }>`
        select (select c.reltuples from pg_class c
                 where c.oid = to_regclass(quote_ident(current_schema()) || '.' || ${table})) as estimate,
               (select count(*) from ${sql.table(table)}) as actual`.execute(store.db);
      const { estimate, actual } = rows[0] as { estimate: number; actual: number };
      return actual >= minRows && (Number(estimate) < 0 || Number(estimate) < actual / 2)
        ? { estimate: Number(estimate), actual: Number(actual) }
        : null;
    };
    const found = await stale();
    if (found === null) continue;
    const what =
      found.estimate < 0
        ? `never analyzed although it holds ${found.actual} rows`
        : `estimated at ${found.estimate} rows but holds ${found.actual}`;
    let fixed = false;
    if (fix) {
      await sql`ANALYZE ${sql.table(table)}`.execute(store.db);
      fixed = (await stale()) === null;
    }
    findings.push({
      check: 'statistics',
      // Slow plans, not wrong data: a deploy gate right after a bulk load must pass.
      severity: 'warning',
      message: `table ${table} is ${what}: the planner may choose slow plans${fixed ? '; fixed by ANALYZE' : ' (onceq doctor --fix runs ANALYZE)'}`,
      ...(fix ? { fixed } : {}),
    });
  }
  return findings;
}
