/**
 * What a message gets when the database refuses its own write (a completion's `insert`
 * rows, its `write(tx)`, or its whole record): one decision for both backends.
 *
 * A write naming a table or column the database does not have is **permanent**: no
 * attempt can succeed until someone changes the schema, so the message goes to the DLQ
 * at once with the database's reason instead of burning every attempt. Any other
 * refusal (a constraint, a trigger, a lock) is temporary: another attempt may succeed.
 */
import { failureOf } from '../handler/run.ts';
import type { FailInput } from '../types.ts';
import { isMissingTableOrColumn as postgresMissing } from './postgres/errors.ts';
import { isMissingTableOrColumn as sqliteMissing } from './sqlite/errors.ts';

/** The statement named a table or column the database (either backend) does not have. */
export function isMissingTableOrColumn(error: unknown): boolean {
  return sqliteMissing(error) || postgresMissing(error);
}

/**
 * The failure of a message whose `what` (`insert rows`, `completion`) the database
 * refused: `write_failed`, permanent for a missing table or column, else temporary.
 */
export function writeRefusal(error: unknown, what: string): FailInput & { detail: string } {
  const reason = error instanceof Error ? error.message : String(error);
  return {
    kind: isMissingTableOrColumn(error) ? 'permanent' : 'temporary',
    code: 'write_failed',
    detail: `the store refused this message's ${what}: ${reason}`,
  };
}

/**
 * What a completion's savepoint threw, as the message's failure: a missing table or
 * column the `write(tx)` named is a permanent `write_failed`; anything else is read as a
 * handler's throw is ({@link failureOf}).
 */
export function completionFailureOf(error: unknown): FailInput {
  return isMissingTableOrColumn(error) ? writeRefusal(error, 'write') : failureOf(error);
}
