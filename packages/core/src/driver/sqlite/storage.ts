import { accessSync, constants, existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { StorageError, type StorageFault } from '../../errors.ts';

/** SQLite result codes (primary and extended) that mean the storage, not onceq, failed. */
const FAULTS: readonly [RegExp, StorageFault][] = [
  [/^SQLITE_FULL/, 'disk_full'],
  [/^SQLITE_READONLY/, 'read_only'],
  [/^SQLITE_IOERR/, 'io_error'],
];

/**
 * `error` as a {@link StorageError} for the store at `location` when SQLite says the disk
 * is full, read-only or failing; any other error unchanged. SQLite often reports a full
 * disk as an I/O error (it cannot size its `-shm` file: `SQLITE_IOERR_SHMSIZE`, or a
 * write fails): an I/O error on a file system with no free block left is a full disk.
 */
export function asStorageError(error: unknown, location: string): unknown {
  if (!(error instanceof Error) || error instanceof StorageError) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  // Opening for writing fails with CANTOPEN on a read-only file system: say so.
  if (code.startsWith('SQLITE_CANTOPEN') && existsSync(location) && !writable(location)) {
    return new StorageError('read_only', location, { cause: error });
  }
  for (const [pattern, fault] of FAULTS) {
    if (pattern.test(code)) {
      const full = fault === 'io_error' && noSpaceLeft(location);
      return new StorageError(full ? 'disk_full' : fault, location, { cause: error });
    }
  }
  return error;
}

/** True when the file system holding `path` has no block left for us; false when unknown. */
function noSpaceLeft(path: string): boolean {
  try {
    return statfsSync(dirname(path)).bavail === 0;
  } catch {
    return false;
  }
}

/** Whether this process may write `path` and create files beside it (WAL needs both). */
function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    accessSync(dirname(path), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
