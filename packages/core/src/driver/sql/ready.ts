/**
 * Reads of the ready messages of every queue, the same words on both backends.
 *
 * Ready messages are indexed only by `messages_ready_queue` (queue, available_at,
 * event_id; migration 0015), so "the earliest ready message" of the store is the earliest
 * of each queue's: {@link readyQueues} finds the queues that hold one by a loose index
 * scan (one seek per queue: the least queue name, then the least after it, and so on), and
 * {@link overReadyQueues} reads each queue's range of the index. The cost grows with the
 * number of queues, never with the number of messages.
 */
import type { SqlDialect } from '../sql-text.ts';

/** A `WITH RECURSIVE` clause naming `ready_queues (queue)`: every queue with a ready message, and a last NULL row. */
export function readyQueues(d: SqlDialect): string {
  const messages = d.table('messages');
  return `WITH RECURSIVE ready_queues (queue) AS (
      SELECT min(queue) FROM ${messages} WHERE state = 'ready'
      UNION ALL
      SELECT (SELECT min(m.queue) FROM ${messages} m WHERE m.state = 'ready' AND m.queue > r.queue)
      FROM ready_queues r WHERE r.queue IS NOT NULL
    )`;
}

/**
 * A scalar subquery over {@link readyQueues}: `outer` (`min` or `sum`) of each queue's
 * `inner` (an aggregate of its ready messages, alias `m`, where `condition` holds, if given).
 */
export function overReadyQueues(
  d: SqlDialect,
  outer: 'min' | 'sum',
  inner: string,
  condition?: string,
): string {
  return `(SELECT ${outer}((SELECT ${inner} FROM ${d.table('messages')} m
      WHERE m.state = 'ready' AND m.queue = r.queue${condition === undefined ? '' : ` AND ${condition}`}))
    FROM ready_queues r WHERE r.queue IS NOT NULL)`;
}
