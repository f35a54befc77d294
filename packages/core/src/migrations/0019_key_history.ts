import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: a key's positions move out of `messages` into `message_keys (queue,
 * ordering_key, seq) → event_id`, a table that only enqueue, a redrive's rejoin and
 * forgetting write; the unique `messages_key` index on `messages` is dropped.
 *
 * Every change of a message's state (a release, a claim, an ACK) writes a new row
 * version, and a new version gets a new entry in every index of `messages`:
 * `messages_key` took one for each of the four state changes of a keyed message, with
 * the same key each time, and the server spent its time comparing and cleaning out those
 * entries. A key's positions never change with its messages' states, so they now live
 * where no state change writes. Everything that reads a key's order reads this table: an
 * enqueue's tail, the release of a key's next message (`onceq_release_next` finds the
 * next position here, then the message by its event id), a rejoin, the blocked keys'
 * count behind their head, the deliveries' order and the doctor. Its primary key keeps
 * a key's positions unique, as `messages_key` did. `messages.seq` stays: it is the
 * position the statements that finish a message pass to the release.
 *
 * SQLite is unchanged: an update there rewrites only the index entries of the columns it
 * changes, so `messages_key` costs a state change nothing, and its release trigger keeps
 * going to the next message by the rowid the index holds.
 */
export const keyHistorySchema: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    `CREATE TABLE message_keys (
      queue TEXT NOT NULL,
      ordering_key TEXT NOT NULL,
      seq BIGINT NOT NULL CHECK (seq >= 1),
      event_id TEXT NOT NULL,
      PRIMARY KEY (queue, ordering_key, seq)
    )`,
    `INSERT INTO message_keys (queue, ordering_key, seq, event_id)
     SELECT queue, ordering_key, seq, event_id FROM messages WHERE ordering_key IS NOT NULL`,
    'DROP INDEX messages_key',
    `CREATE OR REPLACE FUNCTION onceq_release_next(queues text[], keys text[], seqs bigint[], released_at bigint)
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
           SELECT x.event_id FROM message_keys AS x
           WHERE x.queue = f.queue AND x.ordering_key = f.ordering_key AND x.seq > f.seq
           ORDER BY x.seq LIMIT 1) AS next
         WHERE m.event_id = next.event_id AND m.state = 'waiting'
         RETURNING m.queue)
       SELECT moved.queue, count(*) FROM moved GROUP BY moved.queue;
     END $$`,
  ],
};
