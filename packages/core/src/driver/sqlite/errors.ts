/**
 * SQLite's words for a statement naming a table or column the file does not have:
 * `no such table: t`, `no such column: c`, `table t has no column named c` (all
 * `SQLITE_ERROR`, told apart only by the message).
 */
const MISSING_OBJECT = /^(no such table: |no such column: |table \S+ has no column named )/;

/** The statement named a table or column the database does not have. */
export function isMissingTableOrColumn(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'SQLITE_ERROR' && typeof message === 'string' && MISSING_OBJECT.test(message);
}
