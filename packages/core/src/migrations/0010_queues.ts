import type { BackendKind } from '../driver/backend.ts';

/**
 * Named queues and the dead-key policy (docs/worker.md, docs/ordering.md).
 *
 * - `queue`: the queue a message belongs to, `default` for every message stored before.
 *   Claims filter by it: `messages_ready_queue (queue, available_at, event_id) WHERE
 *   state = 'ready'` is the head of one queue in claim order, so a claim reads it without
 *   a scan or a sort, however many messages wait in other queues.
 * - Ordering keys are scoped to a queue: `messages_key` becomes `(queue, ordering_key,
 *   seq)`, the release trigger looks for the next message in its queue, and PostgreSQL's
 *   per-key lock is taken on `queue/key` (a queue name has no `/`).
 * - `on_dead`: what the message does to its ordering key if it dies, stamped by each
 *   claim from the claiming worker's policy (so a lease that expires and dies under
 *   another worker's recovery follows the rule it was claimed under). `block` (the
 *   default) holds the key; `skip` lets the key's next message go: the release trigger
 *   also fires when a keyed message goes `dead` with `on_dead = 'skip'`.
 */
const RELEASE_WHEN =
  "NEW.ordering_key IS NOT NULL AND OLD.state <> NEW.state AND (NEW.state IN ('done', 'skipped') OR (NEW.state = 'dead' AND NEW.on_dead = 'skip'))";

export const queuesSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `ALTER TABLE messages ADD COLUMN queue TEXT NOT NULL DEFAULT 'default'
      CHECK (length(queue) BETWEEN 1 AND 64)`,
    `ALTER TABLE messages ADD COLUMN on_dead TEXT NOT NULL DEFAULT 'block'
      CHECK (on_dead IN ('block', 'skip'))`,
    `CREATE INDEX messages_ready_queue ON messages (queue, available_at, event_id)
     WHERE state = 'ready'`,
    'DROP INDEX messages_key',
    `CREATE UNIQUE INDEX messages_key ON messages (queue, ordering_key, seq)
     WHERE ordering_key IS NOT NULL`,
    'DROP TRIGGER messages_key_release',
    `CREATE TRIGGER messages_key_release AFTER UPDATE OF state ON messages
     WHEN ${RELEASE_WHEN}
     BEGIN
       UPDATE messages SET state = 'ready', updated_at = NEW.updated_at
       WHERE event_id = (
         SELECT event_id FROM messages
         WHERE queue = NEW.queue AND ordering_key = NEW.ordering_key AND seq > NEW.seq
         ORDER BY seq LIMIT 1)
       AND state = 'waiting';
     END`,
  ],
  postgres: [
    `ALTER TABLE messages
      ADD COLUMN queue TEXT NOT NULL DEFAULT 'default' CHECK (length(queue) BETWEEN 1 AND 64),
      ADD COLUMN on_dead TEXT NOT NULL DEFAULT 'block' CHECK (on_dead IN ('block', 'skip'))`,
    `CREATE INDEX messages_ready_queue ON messages (queue, available_at, event_id)
     WHERE state = 'ready'`,
    'DROP INDEX messages_key',
    `CREATE UNIQUE INDEX messages_key ON messages (queue, ordering_key, seq)
     WHERE ordering_key IS NOT NULL`,
    `CREATE OR REPLACE FUNCTION onceq_release_key() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM onceq_lock_keys(ARRAY[NEW.queue || '/' || NEW.ordering_key]);
       -- A statement that starts after the lock: it sees every enqueue of the key committed.
       UPDATE messages SET state = 'ready', updated_at = NEW.updated_at
       WHERE event_id = (
         SELECT event_id FROM messages
         WHERE queue = NEW.queue AND ordering_key = NEW.ordering_key AND seq > NEW.seq
         ORDER BY seq LIMIT 1)
       AND state = 'waiting';
       IF FOUND THEN
         INSERT INTO onceq_counts (kind, key, n, total)
         VALUES ('state', 'waiting', -1, 0), ('state', 'ready', 1, 0);
       END IF;
       RETURN NULL;
     END $$`,
    'DROP TRIGGER messages_key_release ON messages',
    `CREATE TRIGGER messages_key_release AFTER UPDATE OF state ON messages FOR EACH ROW
     WHEN (${RELEASE_WHEN.replace('OLD.state <> NEW.state', 'OLD.state IS DISTINCT FROM NEW.state')})
     EXECUTE FUNCTION onceq_release_key()`,
  ],
};
