import type { BackendKind } from '../driver/backend.ts';
import { queueCountsAndClaimAttemptsSchema } from './0012_queue_counts_and_claim_attempts.ts';

/**
 * SQLite: the CHECKs that name a list of values (`state IN (…)` on `messages`, `kind IN
 * (…)` on `onceq_counts`) say the same as comparisons joined by `OR`.
 *
 * SQLite evaluates a CHECK's `IN` list of more than two constants by building a temporary
 * b-tree of the list, and in a CHECK it builds it again for every row written: each
 * change of a message's state (a claim, an ACK, a failure, a key's release) and each
 * effect counted (the counter's upsert) opened, filled and closed one, a large share of
 * SQLite's work per message. A chain of `=` comparisons is evaluated in place.
 *
 * SQLite cannot alter a CHECK, so both tables are rebuilt. `messages` is a parent (of
 * `effects`, `completions` and `deliveries`): its rows go aside, the table is dropped
 * and made again under its own name, and its rows come back. With `defer_foreign_keys`
 * the drop's removal of every parent row counts the children it leaves without one
 * instead of failing, and each row put back counts its children found again, so the
 * commit sees nothing missing. The indexes and triggers of `messages` go with the table
 * and are made again after the rows are back (the counters already count them); the
 * key release trigger's UPDATE now finds the next message by rowid.
 * `onceq_counts` is rebuilt as 0012 did, once no trigger that writes it is left.
 *
 * PostgreSQL checks a list in place: nothing changes there.
 */
const STATE =
  "state = 'ready' OR state = 'leased' OR state = 'done' OR state = 'dead' OR state = 'waiting' OR state = 'skipped'";

const MESSAGE_COLUMNS = `event_id, payload, state, attempts, generation, available_at,
       lease_until, last_error_code, last_error_detail, enqueued_at, updated_at,
       payload_sha256, pruned_at, ordering_key, seq, queue, on_dead, max_attempts`;

const EFFECT_TRIGGERS = ['effects_count_insert', 'effects_count_update', 'effects_count_delete'];

/** The counter triggers of 0012 (messages and effects), as 0012 wrote them. */
const COUNT_TRIGGERS = queueCountsAndClaimAttemptsSchema.sqlite.filter((s) =>
  s.startsWith('CREATE TRIGGER'),
);

/** When a keyed message's state change releases its key (0010). */
const RELEASE_WHEN =
  "NEW.ordering_key IS NOT NULL AND OLD.state <> NEW.state AND (NEW.state IN ('done', 'skipped') OR (NEW.state = 'dead' AND NEW.on_dead = 'skip'))";

/**
 * The key release trigger of 0010, its UPDATE going to the next message by the rowid its
 * `messages_key` entry holds instead of looking its event id up in the primary key again.
 */
const RELEASE_TRIGGER = `CREATE TRIGGER messages_key_release AFTER UPDATE OF state ON messages
     WHEN ${RELEASE_WHEN}
     BEGIN
       UPDATE messages SET state = 'ready', updated_at = NEW.updated_at
       WHERE rowid = (
         SELECT rowid FROM messages
         WHERE queue = NEW.queue AND ordering_key = NEW.ordering_key AND seq > NEW.seq
         ORDER BY seq LIMIT 1)
       AND state = 'waiting';
     END`;

export const checksWithoutListsSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    'PRAGMA defer_foreign_keys = ON',
    ...EFFECT_TRIGGERS.map((t) => `DROP TRIGGER ${t}`),
    `CREATE TEMP TABLE messages_0014 AS SELECT ${MESSAGE_COLUMNS} FROM messages`,
    'DROP TABLE messages',
    `CREATE TABLE messages (
      event_id TEXT NOT NULL PRIMARY KEY CHECK (length(event_id) BETWEEN 1 AND 200 AND event_id NOT GLOB '*[^!-~]*'),
      payload TEXT CHECK (length(payload) >= 2),
      state TEXT NOT NULL CHECK (${STATE}),
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
      queue TEXT NOT NULL DEFAULT 'default' CHECK (length(queue) BETWEEN 1 AND 64),
      on_dead TEXT NOT NULL DEFAULT 'block' CHECK (on_dead = 'block' OR on_dead = 'skip'),
      max_attempts INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
      CHECK ((state = 'leased') = (lease_until IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload IS NOT NULL)),
      CHECK ((pruned_at IS NULL) = (payload_sha256 IS NULL)),
      CHECK (pruned_at IS NULL OR state = 'done' OR state = 'dead' OR state = 'skipped'),
      CHECK ((ordering_key IS NULL) = (seq IS NULL)),
      CHECK (state <> 'waiting' OR ordering_key IS NOT NULL)
    ) STRICT`,
    `INSERT INTO messages (${MESSAGE_COLUMNS}) SELECT ${MESSAGE_COLUMNS} FROM messages_0014`,
    'DROP TABLE messages_0014',
    `CREATE TABLE onceq_counts_0014 (
      kind TEXT NOT NULL CHECK (kind = 'state' OR kind = 'effect' OR kind = 'queue'),
      key TEXT NOT NULL,
      n INTEGER NOT NULL,
      total INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    ) WITHOUT ROWID, STRICT`,
    'INSERT INTO onceq_counts_0014 SELECT kind, key, n, total FROM onceq_counts',
    'DROP TABLE onceq_counts',
    'ALTER TABLE onceq_counts_0014 RENAME TO onceq_counts',
    'CREATE INDEX messages_claim ON messages (state, available_at, event_id)',
    "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
    "CREATE INDEX messages_dead ON messages (updated_at) WHERE state = 'dead'",
    `CREATE INDEX messages_ready_queue ON messages (queue, available_at, event_id)
     WHERE state = 'ready'`,
    `CREATE UNIQUE INDEX messages_key ON messages (queue, ordering_key, seq)
     WHERE ordering_key IS NOT NULL`,
    ...COUNT_TRIGGERS,
    RELEASE_TRIGGER,
  ],
  postgres: [],
};
