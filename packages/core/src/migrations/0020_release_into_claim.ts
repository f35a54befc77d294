import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: `onceq_release_next` can lease the messages it releases to the claim of
 * the statement that calls it, when that claim has room left.
 *
 * A keyed message used to go `waiting` → `ready` when its predecessor finished, and
 * `ready` → `leased` when a later claim took it: two new row versions, each with new
 * index entries, for one hand-out. The result template (complete.ts) finishes messages
 * and claims the next ones in one statement; its claim runs on the statement's snapshot,
 * so it cannot see what the release makes ready. The function now takes that claim's
 * queue, lease and the room it has left (`room`: the rows it asked for less the rows
 * it got). A claim with room took every message claimable in its snapshot, so the
 * messages released next are the first claimable ones after them: the function leases
 * up to `room` of them, in claim order (`available_at`, `event_id`), those of the
 * claim's queue that are due, exactly as the claim would had they been ready before it
 * ran; it stamps them as the claim stamps its own (attempt, generation, lease, `on_dead`,
 * `max_attempts`). The rest go `ready` as before. Callers without a claim pass `room` 0;
 * with no room the function keeps 0019's one lookup per key (a batch's claim is full
 * whenever more messages are ready than it asks for).
 *
 * It returns one row per message it leased (`kind` 'leased', with what a claim returns)
 * and one per queue for the messages it made ready (`kind` 'ready', `n` of them).
 *
 * SQLite is unchanged: its release is a trigger, and its claims see what committed.
 */
export const releaseIntoClaimSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    'DROP FUNCTION onceq_release_next(text[], text[], bigint[], bigint)',
    `CREATE FUNCTION onceq_release_next(queues text[], keys text[], seqs bigint[], released_at bigint,
       claim_queue text, room integer, lease_seconds bigint, claim_max_attempts integer, claim_on_dead text)
     RETURNS TABLE (kind text, released_queue text, n bigint, event_id text, generation integer,
       attempts integer, lease_until bigint, payload text, available_at bigint)
     LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM onceq_lock_keys(ARRAY(
         SELECT DISTINCT (q || '/' || k) COLLATE "C" AS name
         FROM unnest(queues, keys) AS f(q, k) ORDER BY name));
       -- A statement that starts after the locks: it sees every enqueue of the keys committed.
       IF room <= 0 THEN
         -- Nothing to lease: one lookup of each next message, made ready.
         RETURN QUERY WITH moved AS (
           UPDATE messages AS m SET state = 'ready', updated_at = released_at
           FROM unnest(queues, keys, seqs) AS f(queue, ordering_key, seq)
           CROSS JOIN LATERAL (
             SELECT x.event_id FROM message_keys AS x
             WHERE x.queue = f.queue AND x.ordering_key = f.ordering_key AND x.seq > f.seq
             ORDER BY x.seq LIMIT 1) AS following
           WHERE m.event_id = following.event_id AND m.state = 'waiting'
           RETURNING m.queue)
         SELECT 'ready'::text, moved.queue, count(*), NULL::text, NULL::integer, NULL::integer,
           NULL::bigint, NULL::text, NULL::bigint
         FROM moved GROUP BY moved.queue;
         RETURN;
       END IF;
       RETURN QUERY WITH next AS (
         SELECT m.event_id, m.queue, m.available_at FROM unnest(queues, keys, seqs) AS f(queue, ordering_key, seq)
         CROSS JOIN LATERAL (
           SELECT x.event_id FROM message_keys AS x
           WHERE x.queue = f.queue AND x.ordering_key = f.ordering_key AND x.seq > f.seq
           ORDER BY x.seq LIMIT 1) AS following
         JOIN messages AS m ON m.event_id = following.event_id
         WHERE m.state = 'waiting'
       ), leasing AS (
         SELECT next.event_id FROM next
         WHERE next.queue = claim_queue AND next.available_at <= released_at
         ORDER BY next.available_at, next.event_id
         LIMIT room
       ), moved AS (
         UPDATE messages AS m SET
           state = CASE WHEN leasing.event_id IS NULL THEN 'ready' ELSE 'leased' END,
           attempts = CASE WHEN leasing.event_id IS NULL THEN m.attempts ELSE m.attempts + 1 END,
           generation = CASE WHEN leasing.event_id IS NULL THEN m.generation ELSE m.generation + 1 END,
           lease_until = CASE WHEN leasing.event_id IS NULL THEN NULL ELSE released_at + lease_seconds END,
           on_dead = CASE WHEN leasing.event_id IS NULL THEN m.on_dead ELSE claim_on_dead END,
           max_attempts = CASE WHEN leasing.event_id IS NULL THEN m.max_attempts
             ELSE greatest(claim_max_attempts, m.attempts + 1) END,
           updated_at = released_at
         FROM next LEFT JOIN leasing ON leasing.event_id = next.event_id
         WHERE m.event_id = next.event_id AND m.state = 'waiting'
         RETURNING m.state, m.queue, m.event_id, m.generation, m.attempts, m.lease_until, m.payload, m.available_at)
       SELECT 'leased'::text, moved.queue, 1::bigint, moved.event_id, moved.generation, moved.attempts,
         moved.lease_until, moved.payload, moved.available_at
       FROM moved WHERE moved.state = 'leased'
       UNION ALL
       SELECT 'ready'::text, moved.queue, count(*), NULL::text, NULL::integer, NULL::integer,
         NULL::bigint, NULL::text, NULL::bigint
       FROM moved WHERE moved.state = 'ready' GROUP BY moved.queue;
     END $$`,
  ],
};
