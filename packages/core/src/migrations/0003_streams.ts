import type { BackendKind } from '../driver/backend.ts';

/**
 * Real event streams (ids beyond E0000–E9999, retention that keeps dedup):
 *
 * 1. `onceq_meta`, a key/value table; `id_policy` records the store's event id policy
 *    (`lesson`, the default, `general` or `pattern:<regex>`; see input/id-policy.ts).
 * 2. The `event_id` CHECK is relaxed from `E` + four digits to the widest policy,
 *    `general`: 1–200 characters, each printable ASCII without space (`!` … `~`). The
 *    store's own policy is enforced by enqueue; the CHECK keeps every policy's envelope.
 * 3. Tombstones in place: `payload` becomes nullable, with `payload_sha256` (hex SHA-256
 *    of the canonical payload) and `pruned_at`. A pruned message keeps its row (id,
 *    final state, attempts, finish time `updated_at`), so the `effects` foreign key and
 *    the `done ⇔ effect` invariant hold unchanged and a repeat is still recognised.
 *    CHECKs pin the shape: payload absent exactly when `pruned_at` is set, the hash
 *    present exactly then, and only `done` or `dead` rows can be pruned.
 *
 * SQLite cannot alter a CHECK, so it rebuilds `messages` inside the migration's
 * transaction: create the new table, copy, drop, rename, recreate the indexes (0002's
 * partial `messages_lease` included). `effects` references `messages`, and dropping a
 * parent with children fails with foreign keys on (the pragma cannot be switched inside
 * a transaction), so `effects` is copied aside and rebuilt after the new `messages`
 * exists. Both tables stay STRICT with every other CHECK of 0001.
 */
export const streamsSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE messages_0003 (
      event_id TEXT NOT NULL PRIMARY KEY CHECK (length(event_id) BETWEEN 1 AND 200 AND event_id NOT GLOB '*[^!-~]*'),
      payload TEXT CHECK (length(payload) >= 2),
      state TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'done', 'dead')),
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
      CHECK ((state = 'leased') = (lease_until IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload_sha256 IS NULL)),
      CHECK (pruned_at IS NULL OR state IN ('done', 'dead'))
    ) STRICT`,
    `INSERT INTO messages_0003 (event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, last_error_detail, enqueued_at, updated_at)
     SELECT event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, last_error_detail, enqueued_at, updated_at FROM messages`,
    `CREATE TABLE effects_0003 AS SELECT event_id, category, amount_cents, created_at FROM effects`,
    'DROP TABLE effects',
    'DROP TABLE messages',
    'ALTER TABLE messages_0003 RENAME TO messages',
    `CREATE TABLE effects (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      category TEXT NOT NULL CHECK (length(category) > 0),
      amount_cents INTEGER NOT NULL CHECK (amount_cents BETWEEN 1 AND 9999999),
      created_at INTEGER NOT NULL
    ) STRICT`,
    `INSERT INTO effects (event_id, category, amount_cents, created_at)
     SELECT event_id, category, amount_cents, created_at FROM effects_0003`,
    'DROP TABLE effects_0003',
    'CREATE INDEX messages_claim ON messages (state, available_at, event_id)',
    "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
    'CREATE INDEX effects_category ON effects (category, amount_cents)',
    'CREATE TABLE onceq_meta (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) STRICT',
    "INSERT INTO onceq_meta (key, value) VALUES ('id_policy', 'lesson')",
  ],
  postgres: [
    'ALTER TABLE messages DROP CONSTRAINT messages_event_id_check',
    `ALTER TABLE messages ADD CONSTRAINT messages_event_id_check CHECK (event_id ~ '^[!-~]{1,200}$')`,
    'ALTER TABLE messages ALTER COLUMN payload DROP NOT NULL',
    `ALTER TABLE messages
      ADD COLUMN payload_sha256 TEXT CHECK (length(payload_sha256) = 64),
      ADD COLUMN pruned_at BIGINT CHECK (pruned_at >= 0),
      ADD CONSTRAINT messages_pruned_payload CHECK ((pruned_at IS NULL) = (payload IS NOT NULL)),
      ADD CONSTRAINT messages_pruned_hash CHECK ((pruned_at IS NULL) = (payload_sha256 IS NULL)),
      ADD CONSTRAINT messages_pruned_state CHECK (pruned_at IS NULL OR state IN ('done', 'dead'))`,
    'CREATE TABLE onceq_meta (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)',
    "INSERT INTO onceq_meta (key, value) VALUES ('id_policy', 'lesson')",
  ],
};
