import { type DoctorReport, doctor } from '@onceq/core/admin';
import { boolFlag, expectPositionals, intFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { toJson } from '../output.ts';

/** Exit code when the doctor found a problem: the store is refused as it stands. */
export const DOCTOR_PROBLEM_EXIT = 3;

interface DoctorArgs {
  fix: boolean;
  staleLeaseSeconds?: number;
}

export const doctorCommand = defineCommand<DoctorArgs>({
  name: 'doctor',
  summary: 'check the store: schema, integrity, invariants, stale leases (exit 3 on a problem)',
  flags: {
    fix: { type: 'boolean', help: 'PostgreSQL: run ANALYZE where planner statistics are missing' },
    'stale-lease': {
      type: 'string',
      value: 'seconds',
      help: 'warn about leases expired longer ago than this (default 3600)',
    },
  },
  examples: ['doctor', 'doctor --json --db postgres://onceq@db/onceq || exit 1'],
  opensStore: true,
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'doctor');
    const stale = intFlag(values, 'stale-lease', { min: 1 });
    return {
      fix: boolFlag(values, 'fix') === true,
      ...(stale === undefined ? {} : { staleLeaseSeconds: stale }),
    };
  },
  async run(args, { store, json, ctx }) {
    const report = await doctor(store, args);
    if (json) ctx.out(toJson(report));
    else for (const line of describe(report)) ctx.out(line);
    return report.healthy ? 0 : DOCTOR_PROBLEM_EXIT;
  },
});

/** One line per finding, then a verdict. */
function describe(report: DoctorReport): string[] {
  const lines = report.findings.map(
    (f) => `${f.fixed ? 'fixed' : f.severity}: ${f.check}: ${f.message}`,
  );
  const problems = report.findings.filter((f) => f.severity === 'problem' && !f.fixed).length;
  const c = report.connections;
  if (c !== undefined) {
    lines.push(
      `connections: ${c.inUse} of ${c.max} in use (max_connections; ${c.reserved} reserved for superusers)`,
    );
  }
  lines.push(
    problems === 0
      ? `healthy: ${report.location} (${report.kind}, ${report.schemaVersion}), ${report.checks.length} checks`
      : `${problems} problem${problems === 1 ? '' : 's'} in ${report.location} (${report.kind})`,
  );
  return lines;
}
