import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Why a SQLite store path cannot work, in plain words (not SQLite's "unable to open
 * database file"), or null when it can. `mode` `read`: the file must exist and be
 * readable; `write`: the file, or the directory it would be created in, must be writable.
 */
export function storePathProblem(path: string, mode: 'read' | 'write'): string | null {
  if (path === ':memory:') return null;
  if (existsSync(path)) {
    const info = statSync(path);
    if (info.isDirectory()) return `${path} is a directory, not a store file`;
    return accessProblem(path, mode === 'write' ? constants.R_OK | constants.W_OK : constants.R_OK);
  }
  if (mode === 'read') return null; // The caller reports a missing store its own way.
  const dir = dirname(path);
  if (!existsSync(dir)) return `the directory ${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  return accessProblem(dir, constants.W_OK);
}

function accessProblem(path: string, mode: number): string | null {
  try {
    accessSync(path, mode);
    return null;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EROFS') return `the file system of ${path} is read-only`;
    if (code === 'EACCES' || code === 'EPERM') return `permission denied for ${path}`;
    return `${path}: ${(error as Error).message}`;
  }
}

/** A SQLite open error in plain words, when its message says what went wrong. */
export function describeOpenFailure(message: string, path: string): string | null {
  if (/readonly|read-only/i.test(message)) return `the file system of ${path} is read-only`;
  if (/permission|access/i.test(message)) return `permission denied for ${path}`;
  if (/disk.*full|SQLITE_FULL/i.test(message)) return `the disk holding ${path} is full`;
  return null;
}
