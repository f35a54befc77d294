/**
 * `doctor`: checks a store and says what is wrong, one finding per problem. Usable as a
 * deploy gate (`onceq doctor --json`, non-zero exit on a problem).
 */
import type { Store } from '../driver/backend.ts';
import { type CounterDrift, findCounterDrift, recomputeCounters } from './counters.ts';
import { checkIdPolicy, checkInvariants, checkStaleLeases } from './doctor-invariants.ts';
import { checkSchemaDrift, checkSchemaVersion } from './doctor-schema.ts';
import type { ConnectionCount, DoctorReport, Finding } from './doctor-types.ts';

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
 * CHECKs, foreign keys, indexes against what the migrations build), the backend's
 * storage probes (SQLite's `integrity_check` and `foreign_key_check`), the id policy,
 * the protocol invariants, the maintained counters against real counts, stale leases,
 * the backend's planner probes (PostgreSQL statistics), and the server's connections
 * against `max_connections` (PostgreSQL). Reads only, except `fix`.
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
  const probe = { fix: options.fix === true, statisticsMinRows: options.statisticsMinRows ?? 1000 };
  for (const check of store.driver.storageProbes) {
    await run(check.name, () => store.read((x) => check.run(x, probe)));
  }
  await run('id_policy', () => checkIdPolicy(store));
  await run('invariants', () => checkInvariants(store));
  await run('counters', () => checkCounters(store, options.fix === true));
  await run('stale_leases', () => checkStaleLeases(store, options.staleLeaseSeconds ?? 3600));
  for (const check of store.driver.plannerProbes) {
    await run(check.name, () => store.read((x) => check.run(x, probe)));
  }
  let connections: ConnectionCount | undefined;
  const readConnections = store.driver.readConnections;
  if (readConnections !== undefined) {
    await run('connections', async () => {
      connections = await store.read(readConnections);
      return checkConnections(connections);
    });
  }
  return {
    healthy: findings.every((f) => f.severity !== 'problem' || f.fixed === true),
    kind: store.kind,
    location: store.location,
    schemaVersion: version,
    checks,
    findings,
    ...(connections === undefined ? {} : { connections }),
  };
}

/** Share of the slots other roles may take beyond which the doctor warns. */
const CONNECTIONS_WARN_SHARE = 0.8;

/**
 * A server close to `max_connections` refuses the next process that connects (a
 * producer, an operator's command): a warning, since workers that already hold a
 * connection degrade rather than fail (the connection budget in docs/postgres.md).
 */
export function checkConnections(count: ConnectionCount): Finding[] {
  const open = count.max - count.reserved;
  if (count.inUse < open * CONNECTIONS_WARN_SHARE) return [];
  return [
    {
      check: 'connections',
      severity: 'warning',
      message: `${count.inUse} of ${count.max} connections in use (${open} for roles that are not superusers): the next process may be refused; see the connection budget in docs/postgres.md`,
    },
  ];
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
  const what =
    d.kind === 'state'
      ? `${d.key} messages`
      : d.kind === 'queue'
        ? `${d.key.slice(d.key.lastIndexOf('/') + 1)} messages of queue ${d.key.slice(0, d.key.lastIndexOf('/'))}`
        : d.kind === 'storage'
          ? 'messages that keep their payload'
          : `effects of category ${d.key}`;
  const total =
    d.kind === 'effect'
      ? ` (sum ${d.stored.total}, really ${d.actual.total})`
      : d.kind === 'storage'
        ? ` (${d.stored.total} payload bytes, really ${d.actual.total})`
        : '';
  return `${what} counted ${d.stored.n}, really ${d.actual.n}${total}`;
}
