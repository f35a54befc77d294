/**
 * Which dead messages an operation takes (a redrive, its preview): the named ones,
 * every one, or every one of a queue. One statement text per shape: an IN list per
 * arity, a bare one for all, a bound queue name for one queue.
 */
import { params, type SqlDialect, type SqlText, statement, statementFor } from '../sql-text.ts';

/** Named event ids, `'all'`, or `{ queue }`: every dead message of that queue. */
export type DeadSelection = readonly string[] | 'all' | { queue: string };

/**
 * A selection's SQL term, its first parameter numbered `first`: `null` for all, the IN
 * list for ids (any state: the caller refuses those not dead), dead of the queue for one.
 */
export type SelectionTerm = string | null;

/**
 * The statement `write` gives for each shape of selection, and its values: the selection
 * binds from parameter `first` on (the values of lower numbers are the caller's).
 */
export function bySelection(
  operation: string,
  first: number,
  write: (d: SqlDialect, term: SelectionTerm) => string,
): (d: SqlDialect, selection: DeadSelection) => { text: SqlText; values: unknown[] } {
  const byIds = statementFor(operation, (d, n) =>
    write(d, n === 0 ? null : `event_id IN (${params(d, first, n)})`),
  );
  const byQueue = statement(`${operation}-queue`, (d) =>
    write(d, `state = 'dead' AND queue = ${d.param(first)}`),
  );
  return (d, selection) =>
    selection === 'all'
      ? { text: byIds(d, 0), values: [] }
      : isQueueSelection(selection)
        ? { text: byQueue(d), values: [selection.queue] }
        : { text: byIds(d, selection.length), values: [...selection] };
}

export function isQueueSelection(selection: DeadSelection): selection is { queue: string } {
  return typeof selection === 'object' && 'queue' in selection;
}

/** True for a list of no ids: nothing to select, no statement to run. */
export function selectsNothing(selection: DeadSelection): boolean {
  return Array.isArray(selection) && selection.length === 0;
}
