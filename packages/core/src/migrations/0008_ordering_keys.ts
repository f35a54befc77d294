import type { BackendKind } from '../driver/backend.ts';
import { countersSchema } from './0004_counters.ts';
import { completionsSchema } from './0005_completions.ts';

/**
 * Ordering keys (docs/ordering.md): within a key, one message at a time, in enqueue order.
 *
 * - `ordering_key` (1–200 characters, `NULL` for a message without a key) and `seq`, its
 *   position in its key (set exactly when the key is; unique per key).
 * - Two states: `waiting` (a keyed message held behind the unfinished message of its key
 *   enqueued before it; never claimed) and `skipped` (a dead message put aside on purpose:
 *   final, like `done`, and releasing its key). A keyed message is stored `ready` when its
 *   key has no unfinished message (it is the key's head), else `waiting`; the claim only
 *   ever sees `ready` rows, so it is unchanged and blocked keys cost it nothing.
 * - `messages_key (ordering_key, seq)`: enqueue finds a key's last message and the release
 *   its next one, each the edge of one index range, whatever the key's history.
 * - `messages_key_release`, a row trigger whose `WHEN` is false for a message without a
 *   key (unkeyed traffic never runs it): when a keyed message becomes `done` or `skipped`,
 *   the key's next message (the next `seq`; a key finishes its messages in order, so the
 *   finished ones are a prefix) goes `waiting` → `ready` in the same transaction.
 *
 * PostgreSQL: an enqueue deciding head or waiting and a release promoting the next
 * message must not interleave (each reads before the other commits: a message left
 * waiting behind a head already done). Both take a transaction-scoped advisory lock per
 * key (`onceq_lock_keys`, keys in sorted order within an enqueue), and each reads the
 * key only in a statement that starts after its lock is held, so it sees what the other
 * committed. The release counts its own move in `onceq_counts` (0006: statements count
 * themselves there). SQLite's one writer serialises them; its counter triggers count
 * the move.
 *
 * SQLite cannot alter a CHECK, so it rebuilds `messages` as 0003 did (effects and
 * completions copied aside, since dropping a parent with children fails with foreign
 * keys on), then recreates every index and trigger of the tables it rebuilt.
 */
const SQLITE_COUNTER_TRIGGERS = countersSchema.sqlite.filter((s) => s.startsWith('CREATE TRIGGER'));

const STATES = "('ready', 'leased', 'done', 'dead', 'waiting', 'skipped')";

export const orderingKeysSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE messages_0008 (
      event_id TEXT NOT NULL PRIMARY KEY CHECK (length(event_id) BETWEEN 1 AND 200 AND event_id NOT GLOB '*[^!-~]*'),
      payload TEXT CHECK (length(payload) >= 2),
      state TEXT NOT NULL CHECK (state IN ${STATES}),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
      available_at INTEGER NOT NULL CHECK (available_at >= 0),
      lease_until INTEGER CHECK (lease_until >= 0),
      last_error_code TEXT,
      last_error_detail TEXT,
      enqueued_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      payload_sha256 TEXT CHECK (length(payload_sha256) = 64),
      pruned_at INTEGER CHECK (pruned_at >= 0),
      ordering_key TEXT CHECK (length(ordering_key) BETWEEN 1 AND 200),
      seq INTEGER CHECK (seq >= 1),
      CHECK ((state = 'leased') = (lease_until IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload_sha256 IS NULL)),
      CHECK (pruned_at IS NULL OR state IN ('done', 'dead', 'skipped')),
      CHECK ((ordering_key IS NULL) = (seq IS NULL)),
      CHECK (state <> 'waiting' OR ordering_key IS NOT NULL)
    ) STRICT`,
    `INSERT INTO messages_0008 (event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, last_error_detail, enqueued_at, updated_at,
       payload_sha256, pruned_at)
     SELECT event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, last_error_detail, enqueued_at, updated_at,
       payload_sha256, pruned_at FROM messages`,
    'CREATE TABLE effects_0008 AS SELECT event_id, category, amount_cents, created_at FROM effects',
    'CREATE TABLE completions_0008 AS SELECT event_id, summary, created_at FROM completions',
    'DROP TABLE effects',
    'DROP TABLE completions',
    'DROP TABLE messages',
    'ALTER TABLE messages_0008 RENAME TO messages',
    `CREATE TABLE effects (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      category TEXT NOT NULL CHECK (length(category) > 0),
      amount_cents INTEGER NOT NULL CHECK (amount_cents BETWEEN 1 AND 9999999),
      created_at INTEGER NOT NULL
    ) STRICT`,
    `INSERT INTO effects (event_id, category, amount_cents, created_at)
     SELECT event_id, category, amount_cents, created_at FROM effects_0008`,
    'DROP TABLE effects_0008',
    ...completionsSchema.sqlite,
    `INSERT INTO completions (event_id, summary, created_at)
     SELECT event_id, summary, created_at FROM completions_0008`,
    'DROP TABLE completions_0008',
    'CREATE INDEX messages_claim ON messages (state, available_at, event_id)',
    "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
    "CREATE INDEX messages_dead ON messages (updated_at) WHERE state = 'dead'",
    'CREATE INDEX effects_category ON effects (category, amount_cents)',
    ...SQLITE_COUNTER_TRIGGERS,
    `INSERT INTO onceq_counts (kind, key, n, total)
     VALUES ('state', 'waiting', 0, 0), ('state', 'skipped', 0, 0)`,
    `CREATE UNIQUE INDEX messages_key ON messages (ordering_key, seq)
     WHERE ordering_key IS NOT NULL`,
    `CREATE TRIGGER messages_key_release AFTER UPDATE OF state ON messages
     WHEN NEW.ordering_key IS NOT NULL AND NEW.state IN ('done', 'skipped') AND OLD.state <> NEW.state
     BEGIN
       UPDATE messages SET state = 'ready', updated_at = NEW.updated_at
       WHERE event_id = (
         SELECT event_id FROM messages
         WHERE ordering_key = NEW.ordering_key AND seq > NEW.seq ORDER BY seq LIMIT 1)
       AND state = 'waiting';
     END`,
  ],
  postgres: [
    `ALTER TABLE messages
      DROP CONSTRAINT messages_state_check,
      ADD CONSTRAINT messages_state_check CHECK (state IN ${STATES}),
      DROP CONSTRAINT messages_pruned_state,
      ADD CONSTRAINT messages_pruned_state CHECK (pruned_at IS NULL OR state IN ('done', 'dead', 'skipped')),
      ADD COLUMN ordering_key TEXT CHECK (length(ordering_key) BETWEEN 1 AND 200),
      ADD COLUMN seq BIGINT CHECK (seq >= 1),
      ADD CONSTRAINT messages_key_seq CHECK ((ordering_key IS NULL) = (seq IS NULL)),
      ADD CONSTRAINT messages_waiting_key CHECK (state <> 'waiting' OR ordering_key IS NOT NULL)`,
    `CREATE UNIQUE INDEX messages_key ON messages (ordering_key, seq)
     WHERE ordering_key IS NOT NULL`,
    // One lock per key and store (the schema is part of the hashed text); callers pass
    // the keys sorted, so two enqueues take shared keys in the same order.
    `CREATE FUNCTION onceq_lock_keys(keys text[]) RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     DECLARE k text;
     BEGIN
       FOREACH k IN ARRAY keys LOOP
         PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || k, 0));
       END LOOP;
     END $$`,
    `CREATE FUNCTION onceq_release_key() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM onceq_lock_keys(ARRAY[NEW.ordering_key]);
       -- A statement that starts after the lock: it sees every enqueue of the key committed.
       UPDATE messages SET state = 'ready', updated_at = NEW.updated_at
       WHERE event_id = (
         SELECT event_id FROM messages
         WHERE ordering_key = NEW.ordering_key AND seq > NEW.seq ORDER BY seq LIMIT 1)
       AND state = 'waiting';
       IF FOUND THEN
         INSERT INTO onceq_counts (kind, key, n, total)
         VALUES ('state', 'waiting', -1, 0), ('state', 'ready', 1, 0);
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER messages_key_release AFTER UPDATE OF state ON messages FOR EACH ROW
     WHEN (NEW.ordering_key IS NOT NULL AND NEW.state IN ('done', 'skipped') AND OLD.state IS DISTINCT FROM NEW.state)
     EXECUTE FUNCTION onceq_release_key()`,
  ],
};
