import { type Finding, readTracked, trackedFiles } from './git.ts';

/**
 * Check 3 (the team's choice): no database files, database dumps or oversized
 * files are tracked.
 *
 * Why this one: onceq's whole job is to write queue state into SQLite files
 * (and PostgreSQL). A committed database would publish queue contents (event
 * payloads, effects, possibly personal data) and stay in git history forever.
 * The allowlist judges names only; this check looks at the bytes, so a SQLite
 * file renamed to `tests/fixtures/x.jsonl` or a pg_dump saved as `.ts` is still
 * caught, and so is an accidental large dump or benchmark output (size cap).
 */
export const MAX_FILE_BYTES = 512 * 1024;

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const PGDUMP_MAGIC = Buffer.from('PGDMP', 'latin1');
const DB_PATH = /\.(db|sqlite|sqlite3|db3)$|-(wal|shm|journal)$/i;

export function checkArtifacts(repoDir: string): Finding[] {
  const findings: Finding[] = [];
  for (const path of trackedFiles(repoDir)) {
    const add = (message: string) => findings.push({ check: 'artifacts', path, message });
    if (DB_PATH.test(path)) add('database or database journal path is tracked');
    const bytes = readTracked(repoDir, path);
    if (bytes === null) continue;
    if (bytes.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) {
      add('file is a SQLite database (header "SQLite format 3")');
    }
    if (bytes.subarray(0, PGDUMP_MAGIC.length).equals(PGDUMP_MAGIC)) {
      add('file is a pg_dump archive (header "PGDMP")');
    }
    if (bytes.length > MAX_FILE_BYTES) {
      add(`file is ${bytes.length} bytes, over the ${MAX_FILE_BYTES}-byte limit`);
    }
  }
  return findings;
}
