/** What the doctor reports. */

/**
 * `problem`: the store is unhealthy (non-zero exit). `warning`: worth a look, still
 * healthy. `info`: said for context, nothing to do (the application's own tables).
 */
export const FINDING_SEVERITIES = ['problem', 'warning', 'info'] as const;
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number];

export interface Finding {
  /** The check's stable name, e.g. `done_without_outcome`. */
  check: string;
  severity: FindingSeverity;
  /** One sentence, with a count and a few example ids where there are any. */
  message: string;
  /** `--fix` repaired it (PostgreSQL statistics); the store is healthy on this point now. */
  fixed?: boolean;
}

export interface DoctorReport {
  /** No finding of severity `problem` (warnings and info allowed). */
  healthy: boolean;
  kind: 'sqlite' | 'postgres';
  location: string;
  /** The last applied migration. */
  schemaVersion: string | null;
  /** Every check that ran, in order. */
  checks: string[];
  findings: Finding[];
  /** PostgreSQL: the server's connections in use against `max_connections`. */
  connections?: ConnectionCount;
}

/** A PostgreSQL server's connections (see the connection budget in docs/postgres.md). */
export interface ConnectionCount {
  /** Client connections open now, every database and role. */
  inUse: number;
  /** `max_connections`. */
  max: number;
  /** `superuser_reserved_connections`: slots other roles cannot take. */
  reserved: number;
}
