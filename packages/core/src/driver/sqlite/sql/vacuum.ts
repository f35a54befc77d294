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

/**
 * Gives up to `maxPages` free pages back to the file system without rewriting the file
 * (`PRAGMA incremental_vacuum`, in the caller's write transaction), on a store created
 * with `auto_vacuum = INCREMENTAL`; returns how many. 0 on an older store (its free pages
 * are only reused, until a full `VACUUM` switches it) or when none is free.
 */
export async function releaseFreePages(x: Executor, maxPages: number): Promise<number> {
  const mode = (await x.query<{ auto_vacuum: number }>('PRAGMA auto_vacuum')).rows[0];
  if (Number(mode?.auto_vacuum) !== 2) return 0;
  const free = (await x.query<{ freelist_count: number }>('PRAGMA freelist_count')).rows[0];
  const pages = Math.min(Number(free?.freelist_count ?? 0), maxPages);
  if (pages > 0) await x.query(`PRAGMA incremental_vacuum(${pages})`);
  return pages;
}

/** The database's pages (free ones included) as this connection sees them, in bytes; the WAL is not counted. */
export async function storageBytes(x: Executor): Promise<number> {
  const count = (await x.query<{ page_count: number }>('PRAGMA page_count')).rows[0];
  const size = (await x.query<{ page_size: number }>('PRAGMA page_size')).rows[0];
  return Number(count?.page_count ?? 0) * Number(size?.page_size ?? 0);
}
