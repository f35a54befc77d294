import type { Executor } from '../../executor.ts';

/** `VACUUM`: rewrites the file without its free pages (an exclusive lock meanwhile). */
export async function vacuum(x: Executor): Promise<boolean> {
  await x.query('VACUUM');
  return true;
}

/**
 * `VACUUM INTO`: a compacted copy of one read snapshot, written while workers keep
 * claiming and completing (WAL).
 */
export async function copyTo(x: Executor, file: string): Promise<void> {
  await x.query('VACUUM INTO ?1', [file]);
}
