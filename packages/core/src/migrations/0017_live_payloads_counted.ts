import type { BackendKind } from '../driver/backend.ts';
import { queueCountsAndClaimAttemptsSchema } from './0012_queue_counts_and_claim_attempts.ts';

/**
 * The counters also keep how many stored messages still hold their payload and how many
 * bytes those payloads take: `onceq_counts` gains the row `kind = 'storage'`, key
 * `payload` (`n` the messages whose payload is kept, `total` the payloads' UTF-8 bytes).
 * Every other stored message is a tombstone (pruned), so `status --json` splits the
 * store into live and pruned events, and what each kind costs, without reading a row.
 *
 * Only what changes a payload writes it: an insert, a prune (the payload becomes its
 * hash) and a delete. A claim, an ACK or a key's release never touch it.
 * - SQLite: enqueue counts the rows it inserted once per batch (a row trigger would add
 *   a statement to every inserted row; driver/sqlite/sql/insert-messages.ts); the delete
 *   count trigger keeps it beside the state rows, and `messages_count_payload` fires on
 *   an `UPDATE OF payload` only (prune's).
 * - PostgreSQL: the statement triggers of insert and delete count it from their
 *   transition tables; prune's statement counts the payloads it drops itself
 *   (driver/postgres/sql/prune.ts), as the claim and the ACK count their moves (0006).
 *
 * SQLite cannot alter the table's CHECK on `kind`: the small table is rebuilt, the
 * triggers that write it dropped first and made again (as 0012 and 0014 did).
 */
const SQLITE_KINDS = "kind = 'state' OR kind = 'effect' OR kind = 'queue' OR kind = 'storage'";

const COUNT_PAYLOADS = `INSERT INTO onceq_counts (kind, key, n, total)
  SELECT 'storage', 'payload', count(*), coalesce(sum(octet_length(payload)), 0) FROM messages
  WHERE payload IS NOT NULL`;

/** 0012's delete count trigger, which 0017 replaces. */
const REPLACED = ['messages_count_delete'];

/** The other count triggers, made again as 0012 wrote them. */
const KEPT_TRIGGERS = queueCountsAndClaimAttemptsSchema.sqlite.filter(
  (s) =>
    s.startsWith('CREATE TRIGGER') && !REPLACED.some((t) => s.startsWith(`CREATE TRIGGER ${t} `)),
);

const SQLITE_TRIGGERS = [
  'messages_count_insert',
  'messages_count_update',
  'messages_count_delete',
  'messages_count_queue_insert',
  'messages_count_queue_update',
  'messages_count_queue_delete',
  'effects_count_insert',
  'effects_count_update',
  'effects_count_delete',
];

export const livePayloadsCountedSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    ...SQLITE_TRIGGERS.map((t) => `DROP TRIGGER ${t}`),
    `CREATE TABLE onceq_counts_0017 (
      kind TEXT NOT NULL CHECK (${SQLITE_KINDS}),
      key TEXT NOT NULL,
      n INTEGER NOT NULL,
      total INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    ) WITHOUT ROWID, STRICT`,
    'INSERT INTO onceq_counts_0017 SELECT kind, key, n, total FROM onceq_counts',
    'DROP TABLE onceq_counts',
    'ALTER TABLE onceq_counts_0017 RENAME TO onceq_counts',
    COUNT_PAYLOADS,
    `CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
       UPDATE onceq_counts SET n = n - 1 WHERE kind = 'state' AND key = OLD.state;
       UPDATE onceq_counts SET n = n - 1, total = total - octet_length(OLD.payload)
         WHERE kind = 'storage' AND key = 'payload' AND OLD.payload IS NOT NULL;
     END`,
    `CREATE TRIGGER messages_count_payload AFTER UPDATE OF payload ON messages
     WHEN OLD.payload IS NOT NEW.payload BEGIN
       UPDATE onceq_counts SET
         n = n + (NEW.payload IS NOT NULL) - (OLD.payload IS NOT NULL),
         total = total + coalesce(octet_length(NEW.payload), 0) - coalesce(octet_length(OLD.payload), 0)
       WHERE kind = 'storage' AND key = 'payload';
     END`,
    ...KEPT_TRIGGERS,
  ],
  postgres: [
    // Writers wait for the migration's commit: no write falls between the count and the
    // triggers and statements that keep it.
    'LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE',
    'ALTER TABLE onceq_counts DROP CONSTRAINT onceq_counts_kind_check',
    `ALTER TABLE onceq_counts ADD CONSTRAINT onceq_counts_kind_check
      CHECK (kind IN ('state', 'effect', 'queue', 'storage'))`,
    COUNT_PAYLOADS,
    `CREATE OR REPLACE FUNCTION onceq_count_messages_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, count(*), 0 FROM new_rows GROUP BY state
       UNION ALL
       SELECT 'queue', queue || '/' || state, count(*), 0 FROM new_rows
       WHERE queue <> 'default' GROUP BY queue, state
       UNION ALL
       SELECT 'storage', 'payload', count(*), sum(octet_length(payload)) FROM new_rows
       WHERE payload IS NOT NULL HAVING count(*) > 0;
       PERFORM onceq_counts_fold_sometimes();
       RETURN NULL;
     END $$`,
    `CREATE OR REPLACE FUNCTION onceq_count_messages_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, -count(*), 0 FROM old_rows GROUP BY state
       UNION ALL
       SELECT 'queue', queue || '/' || state, -count(*), 0 FROM old_rows
       WHERE queue <> 'default' GROUP BY queue, state
       UNION ALL
       SELECT 'storage', 'payload', -count(*), -sum(octet_length(payload)) FROM old_rows
       WHERE payload IS NOT NULL HAVING count(*) > 0;
       RETURN NULL;
     END $$`,
  ],
};
