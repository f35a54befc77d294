/**
 * `backup`: a consistent copy of a SQLite store while workers run. PostgreSQL stores are
 * backed up with PostgreSQL's own tools (`pg_dump`), see docs/operations.md.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { existsSync, linkSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Store } from '../driver/backend.ts';
import { OnceqError } from '../errors.ts';
import { LESSON_STATES, type MessageState } from '../states.ts';
import type { StateCounts, StatusReport } from '../types.ts';

/** The backup was refused before anything was written: exists, not a directory, PostgreSQL. Exit code 2. */
export class BackupRefusedError extends OnceqError {
  constructor(message: string) {
    super('backup_refused', 2, message);
  }
}

export interface BackupResult {
  file: string;
  bytes: number;
  /** Counts and money of the copy itself: the store as it was at the backup's moment. */
  status: StatusReport;
}

/**
 * Writes a consistent copy of a SQLite store to `file` with `VACUUM INTO`: it reads one
 * snapshot in a read transaction, so workers keep claiming and applying (WAL) while it
 * runs, and the copy holds every committed transaction up to its start and nothing of
 * a later one. The copy is compacted and written under a temporary name in the same
 * directory, then hard-linked to `file` (which never overwrites) and the temporary name
 * removed: `file` is either absent or complete.
 *
 * Restore: stop the workers, move the copy into place (delete the old `-wal`/`-shm`
 * files next to it), run `onceq doctor`.
 *
 * A missing directory of `file` is made, with its parents.
 *
 * @throws BackupRefusedError for a PostgreSQL store, an existing `file`, or a directory
 * that is a file or cannot be made; nothing is written then.
 */
export async function backup(store: Store, file: string): Promise<BackupResult> {
  if (!store.driver.capabilities.backup) {
    throw new BackupRefusedError(
      'backup copies SQLite stores only; back up a PostgreSQL store with pg_dump (see docs/operations.md), nothing was written',
    );
  }
  if (existsSync(file)) {
    throw new BackupRefusedError(`backup file ${file} already exists; onceq never overwrites one`);
  }
  // A missing directory is made (`backups/onceq-$(date +%F).db` works the first time);
  // a file standing where a directory must be is refused.
  const dir = dirname(file);
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    throw new BackupRefusedError(`backup directory ${dir} is a file, not a directory`);
  }
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw new BackupRefusedError(
      `cannot make the backup directory ${dir}: ${(error as Error).message}`,
    );
  }
  const temporary = `${file}.partial-${process.pid}-${Date.now()}`;
  try {
    await store.read((x) => store.driver.copyTo(x, temporary));
    try {
      linkSync(temporary, file);
    } catch (error) {
      if ((error as { code?: string }).code === 'EEXIST') {
        throw new BackupRefusedError(
          `backup file ${file} already exists; onceq never overwrites one`,
        );
      }
      throw error;
    }
  } finally {
    if (existsSync(temporary)) unlinkSync(temporary);
  }
  return { file, bytes: statSync(file).size, status: statusOfFile(file) };
}

/** Counts and totals read straight from a SQLite file (read-only). */
export function statusOfFile(file: string): StatusReport {
  const db = new BunDatabase(file, { readonly: true });
  try {
    const messages = Object.fromEntries(LESSON_STATES.map((s) => [s, 0])) as StateCounts;
    for (const row of db
      .query<{ state: MessageState; n: number }, []>(
        'SELECT state, count(*) AS n FROM messages GROUP BY state',
      )
      .all()) {
      messages[row.state] = row.n;
    }
    const totals: Record<string, number> = {};
    let effects = 0;
    let total = 0;
    for (const row of db
      .query<{ category: string; n: number; cents: number }, []>(
        'SELECT category, count(*) AS n, sum(amount_cents) AS cents FROM effects GROUP BY category ORDER BY category',
      )
      .all()) {
      totals[row.category] = row.cents;
      effects += row.n;
      total += row.cents;
    }
    return { messages, effects, totals, total };
  } finally {
    db.close();
  }
}
