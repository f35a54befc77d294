import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: a statement that finishes keyed messages releases their keys' next
 * messages itself, set-based, instead of a row trigger doing it one message at a time
 * (docs/ordering.md, "How it works"; driver/postgres/sql/release.ts).
 *
 * 0008's `messages_key_release` ran `onceq_release_key` for every keyed message that
 * finished: per message a PL/pgSQL call, a lock, an `UPDATE` of its own and an `INSERT`
 * of counter rows, each statement started and planned again, the largest share of the
 * server's time in an ordered run. It is dropped. `onceq_release_next(queues, keys,
 * seqs, now)` does the same for a whole statement's finished messages at once: it takes
 * the keys' advisory locks in sorted order (as an enqueue does, so the two never wait on
 * each other in a cycle), then, in one statement that starts after the locks are held,
 * makes each key's next message (the next `seq`) `waiting` → `ready`, and returns how
 * many it moved in each queue; the calling statement counts them with its own moves,
 * for the store and for each queue (0006, 0012).
 *
 * The function is `VOLATILE` (the default): its statement reads with a snapshot taken
 * after the locks, and sees what the calling statement changed before the call.
 *
 * A manual SQL `UPDATE` that finishes a keyed message no longer releases its key (as it
 * is no longer counted since 0006): `onceq doctor`'s `key_stuck` check reports such
 * a key. SQLite keeps its trigger: its triggers run inside the statement's own program,
 * no call or planning per row.
 */
export const releaseInStatementSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    'DROP TRIGGER messages_key_release ON messages',
    'DROP FUNCTION onceq_release_key()',
    `CREATE FUNCTION onceq_release_next(queues text[], keys text[], seqs bigint[], released_at bigint)
     RETURNS TABLE (released_queue text, released bigint) LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM onceq_lock_keys(ARRAY(
         SELECT DISTINCT (q || '/' || k) COLLATE "C" AS name
         FROM unnest(queues, keys) AS f(q, k) ORDER BY name));
       -- A statement that starts after the locks: it sees every enqueue of the keys committed.
       RETURN QUERY WITH moved AS (
         UPDATE messages AS m SET state = 'ready', updated_at = released_at
         FROM unnest(queues, keys, seqs) AS f(queue, ordering_key, seq)
         CROSS JOIN LATERAL (
           SELECT x.event_id FROM messages AS x
           WHERE x.queue = f.queue AND x.ordering_key = f.ordering_key AND x.seq > f.seq
           ORDER BY x.seq LIMIT 1) AS next
         WHERE m.event_id = next.event_id AND m.state = 'waiting'
         RETURNING m.queue)
       SELECT moved.queue, count(*) FROM moved GROUP BY moved.queue;
     END $$`,
  ],
};
