import type { BackendKind } from '../driver/backend.ts';

/**
 * Two things each message's state changes now keep, on both backends.
 *
 * **Messages by queue and state are counted like the store's** (`countsByQueue`, read by
 * every `status` of a store with several queues and every metrics scrape): `onceq_counts`
 * gains `kind = 'queue'` rows, key `queue/state` (a queue name has no `/`), kept in the
 * same transaction as every write, so the read sums a few rows per queue instead of
 * counting every message. The `default` queue has none: its counts are the store's less
 * every other queue's, so a store of one queue (the lesson's, and most) writes no more
 * per state change than before. SQLite: the messages' count triggers upsert them beside the
 * state rows (the key release trigger's move is counted by them too). PostgreSQL: the
 * statements that count themselves (claim, recovery, the result template, fail, release,
 * redrive, skip) append queue rows beside their state rows, the enqueue and delete
 * triggers and the key release trigger likewise. SQLite cannot alter the table's CHECK on
 * `kind`, so it rebuilds the small table (its triggers dropped first and made again).
 *
 * **Each message records the attempt limit of its last claim**: `max_attempts`, stamped by
 * every claim from the claiming worker's policy, as `on_dead` is (0010). So what must
 * hold after that worker is gone goes by the rule the message was claimed under, whatever
 * policy other workers run: a claim's lazy recovery sends an expired lease back to ready
 * only while `attempts < max_attempts`, and `onceq doctor`'s `attempts_out_of_bounds`
 * bounds `attempts` by it (a store worked with `--attempts 10` is not a store with three).
 * A message enqueued from now on starts at 3, the lesson's limit, until its first claim.
 * Messages stored before get the least limit their own state proves, and at least 3: a
 * ready or waiting message has attempts left (`attempts + 1`), any other has used at most
 * its limit (`attempts`). Only rows past 3 attempts are rewritten.
 */
const backfill = (max: string) => `UPDATE messages
  SET max_attempts = ${max}(3, CASE WHEN state IN ('ready', 'waiting') THEN attempts + 1 ELSE attempts END)
  WHERE attempts >= 3`;

const MAX_ATTEMPTS = `ALTER TABLE messages ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 3
  CHECK (max_attempts >= 1)`;

const COUNT_QUEUES = `INSERT INTO onceq_counts (kind, key, n, total)
  SELECT 'queue', queue || '/' || state, count(*), 0 FROM messages
  WHERE queue <> 'default' GROUP BY queue, state`;

/** SQLite: one queue row's change by `d` for the row `row` (NEW or OLD). */
const sqliteQueue = (row: 'NEW' | 'OLD', d: 1 | -1) =>
  `INSERT INTO onceq_counts (kind, key, n, total) VALUES ('queue', ${row}.queue || '/' || ${row}.state, ${d}, 0)
       ON CONFLICT (kind, key) DO UPDATE SET n = n + excluded.n;`;

const SQLITE_TRIGGERS = [
  'messages_count_insert',
  'messages_count_update',
  'messages_count_delete',
  'effects_count_insert',
  'effects_count_update',
  'effects_count_delete',
];

export const queueCountsAndClaimAttemptsSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    MAX_ATTEMPTS,
    backfill('max'),
    ...SQLITE_TRIGGERS.map((t) => `DROP TRIGGER ${t}`),
    `CREATE TABLE onceq_counts_0012 (
      kind TEXT NOT NULL CHECK (kind IN ('state', 'effect', 'queue')),
      key TEXT NOT NULL,
      n INTEGER NOT NULL,
      total INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    ) WITHOUT ROWID, STRICT`,
    'INSERT INTO onceq_counts_0012 SELECT kind, key, n, total FROM onceq_counts',
    'DROP TABLE onceq_counts',
    'ALTER TABLE onceq_counts_0012 RENAME TO onceq_counts',
    COUNT_QUEUES,
    `CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
       UPDATE onceq_counts SET n = n + 1 WHERE kind = 'state' AND key = NEW.state;
     END`,
    `CREATE TRIGGER messages_count_update AFTER UPDATE OF state ON messages
     WHEN OLD.state <> NEW.state BEGIN
       UPDATE onceq_counts SET n = n - 1 WHERE kind = 'state' AND key = OLD.state;
       UPDATE onceq_counts SET n = n + 1 WHERE kind = 'state' AND key = NEW.state;
     END`,
    `CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
       UPDATE onceq_counts SET n = n - 1 WHERE kind = 'state' AND key = OLD.state;
     END`,
    `CREATE TRIGGER messages_count_queue_insert AFTER INSERT ON messages
     WHEN NEW.queue <> 'default' BEGIN
       ${sqliteQueue('NEW', 1)}
     END`,
    `CREATE TRIGGER messages_count_queue_update AFTER UPDATE OF state ON messages
     WHEN OLD.state <> NEW.state AND NEW.queue <> 'default' BEGIN
       ${sqliteQueue('OLD', -1)}
       ${sqliteQueue('NEW', 1)}
     END`,
    `CREATE TRIGGER messages_count_queue_delete AFTER DELETE ON messages
     WHEN OLD.queue <> 'default' BEGIN
       ${sqliteQueue('OLD', -1)}
     END`,
    `CREATE TRIGGER effects_count_insert AFTER INSERT ON effects BEGIN
       INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', NEW.category, 1, NEW.amount_cents)
       ON CONFLICT (kind, key) DO UPDATE SET n = n + 1, total = total + excluded.total;
     END`,
    `CREATE TRIGGER effects_count_update AFTER UPDATE OF category, amount_cents ON effects BEGIN
       UPDATE onceq_counts SET n = n - 1, total = total - OLD.amount_cents
         WHERE kind = 'effect' AND key = OLD.category;
       INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', NEW.category, 1, NEW.amount_cents)
       ON CONFLICT (kind, key) DO UPDATE SET n = n + 1, total = total + excluded.total;
     END`,
    `CREATE TRIGGER effects_count_delete AFTER DELETE ON effects BEGIN
       UPDATE onceq_counts SET n = n - 1, total = total - OLD.amount_cents
         WHERE kind = 'effect' AND key = OLD.category;
     END`,
  ],
  postgres: [
    // Writers wait for the migration's commit: no write falls between the count and the
    // statements and triggers that keep it.
    'LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE',
    MAX_ATTEMPTS,
    backfill('greatest'),
    'ALTER TABLE onceq_counts DROP CONSTRAINT onceq_counts_kind_check',
    `ALTER TABLE onceq_counts ADD CONSTRAINT onceq_counts_kind_check
      CHECK (kind IN ('state', 'effect', 'queue'))`,
    COUNT_QUEUES,
    `CREATE OR REPLACE FUNCTION onceq_count_messages_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, count(*), 0 FROM new_rows GROUP BY state
       UNION ALL
       SELECT 'queue', queue || '/' || state, count(*), 0 FROM new_rows
       WHERE queue <> 'default' GROUP BY queue, state;
       PERFORM onceq_counts_fold_sometimes();
       RETURN NULL;
     END $$`,
    `CREATE OR REPLACE FUNCTION onceq_count_messages_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, -count(*), 0 FROM old_rows GROUP BY state
       UNION ALL
       SELECT 'queue', queue || '/' || state, -count(*), 0 FROM old_rows
       WHERE queue <> 'default' GROUP BY queue, state;
       RETURN NULL;
     END $$`,
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
         IF NEW.queue <> 'default' THEN
           INSERT INTO onceq_counts (kind, key, n, total)
           VALUES ('queue', NEW.queue || '/waiting', -1, 0), ('queue', NEW.queue || '/ready', 1, 0);
         END IF;
       END IF;
       RETURN NULL;
     END $$`,
  ],
};
