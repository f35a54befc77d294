/**
 * What kind of store a target names, decided without loading any backend: kept apart from
 * `open.ts` so that a caller asking only this (the CLI resolving `--db`) does not load
 * Kysely or a driver.
 */

/** True for a `postgres://` or `postgresql://` URL: the store is a PostgreSQL database. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}
