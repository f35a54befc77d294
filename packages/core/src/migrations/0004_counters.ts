import type { BackendKind } from '../driver/backend.ts';

/**
 * Maintained counters, so `status` on a store of 1,000,000 messages reads a few rows
 * instead of counting every message and summing every effect (1.5 s on SQLite):
 *
 * - `onceq_counts (kind, key, n, total)`: `kind = 'state'` rows count messages by state
 *   (`total` unused, 0); `kind = 'effect'` rows count effects (`n`) and sum their
 *   `amount_cents` (`total`) by category.
 * - Triggers on `messages` and `effects` keep them in the **same transaction** as every
 *   write (enqueue, claim, recovery, ACK, fail, redrive, release, prune, a manual SQL
 *   fix): a committed write and its counter change are one unit, so a single-statement
 *   read of the counters is one consistent snapshot, like the `GROUP BY` it replaces.
 * - `messages_dead (updated_at) WHERE state = 'dead'`: the oldest dead message, the one
 *   part of `status` that still reads `messages`, is the first entry of a small index.
 *
 * **SQLite** has one writer at a time, so row triggers updating one row per state (and
 * one per category) cost a B-tree update of a page already in cache; the table holds a
 * row per key and `status` reads it as is.
 *
 * **PostgreSQL** runs workers concurrently: one counter row per state would be updated
 * by every claim and every ACK and serialise them on its row lock. Instead the triggers
 * are statement-level with transition tables and **append** delta rows (one per key a
 * statement changed; inserts never wait on each other). `status` sums the rows per key.
 * Every ~32nd statement (chosen at random) folds the rows into one per key, with a
 * `DELETE … RETURNING` feeding an `INSERT` in one statement (each delta is summed exactly
 * once even if two folds raced) behind `pg_try_advisory_xact_lock` (a second folder skips
 * instead of waiting), so the table stays a few hundred rows however long the store runs.
 *
 * Every function pins the store's schema (`SET search_path FROM CURRENT`, the migration
 * runs with the store's `search_path`): a trigger fires for any session that writes the
 * table, including one that names it `schema.messages` under another `search_path`.
 *
 * `onceq doctor` compares the counters with real counts (`counters` check) and
 * `doctor --fix` recomputes them (streams/counters.ts).
 */
export const countersSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE onceq_counts (
      kind TEXT NOT NULL CHECK (kind IN ('state', 'effect')),
      key TEXT NOT NULL,
      n INTEGER NOT NULL,
      total INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    ) WITHOUT ROWID, STRICT`,
    `INSERT INTO onceq_counts (kind, key, n, total)
     SELECT 'state', s.column1, (SELECT count(*) FROM messages m WHERE m.state = s.column1), 0
     FROM (VALUES ('ready'), ('leased'), ('done'), ('dead')) s`,
    `INSERT INTO onceq_counts (kind, key, n, total)
     SELECT 'effect', category, count(*), sum(amount_cents) FROM effects GROUP BY category`,
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
    "CREATE INDEX messages_dead ON messages (updated_at) WHERE state = 'dead'",
  ],
  postgres: [
    // Writers wait for the migration's commit: no write falls between the initial
    // counts and the triggers.
    'LOCK TABLE messages, effects IN SHARE ROW EXCLUSIVE MODE',
    `CREATE TABLE onceq_counts (
      kind TEXT NOT NULL CHECK (kind IN ('state', 'effect')),
      key TEXT NOT NULL,
      n BIGINT NOT NULL,
      total BIGINT NOT NULL
    )`,
    `INSERT INTO onceq_counts (kind, key, n, total)
     SELECT 'state', state, count(*), 0 FROM messages GROUP BY state`,
    `INSERT INTO onceq_counts (kind, key, n, total)
     SELECT 'effect', category, count(*), sum(amount_cents) FROM effects GROUP BY category`,
    // Folds every delta row into one row per key. Safe to run anywhere, any time: the
    // rows a DELETE removes are exactly the rows its INSERT sums.
    `CREATE FUNCTION onceq_counts_fold() RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
       WITH gone AS (DELETE FROM onceq_counts RETURNING kind, key, n, total)
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT kind, key, sum(n), sum(total) FROM gone GROUP BY kind, key
       HAVING kind = 'state' OR sum(n) <> 0 OR sum(total) <> 0
     $$`,
    `CREATE FUNCTION onceq_counts_fold_sometimes() RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       IF random() < 1.0 / 32 AND pg_try_advisory_xact_lock(hashtext(current_schema() || '.onceq_counts')) THEN
         PERFORM onceq_counts_fold();
       END IF;
     END $$`,
    `CREATE FUNCTION onceq_count_messages_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, count(*), 0 FROM new_rows GROUP BY state;
       PERFORM onceq_counts_fold_sometimes();
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION onceq_count_messages_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, sum(d), 0 FROM (
         SELECT state, 1 AS d FROM new_rows UNION ALL SELECT state, -1 FROM old_rows) c
       GROUP BY state HAVING sum(d) <> 0;
       IF FOUND THEN PERFORM onceq_counts_fold_sometimes(); END IF;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION onceq_count_messages_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'state', state, -count(*), 0 FROM old_rows GROUP BY state;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION onceq_count_effects_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'effect', category, count(*), sum(amount_cents) FROM new_rows GROUP BY category;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION onceq_count_effects_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'effect', category, sum(d), sum(a) FROM (
         SELECT category, 1 AS d, amount_cents AS a FROM new_rows
         UNION ALL SELECT category, -1, -amount_cents FROM old_rows) c
       GROUP BY category HAVING sum(d) <> 0 OR sum(a) <> 0;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION onceq_count_effects_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO onceq_counts (kind, key, n, total)
       SELECT 'effect', category, -count(*), -sum(amount_cents) FROM old_rows GROUP BY category;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER messages_count_insert AFTER INSERT ON messages
     REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_messages_insert()`,
    `CREATE TRIGGER messages_count_update AFTER UPDATE ON messages
     REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
     FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_messages_update()`,
    `CREATE TRIGGER messages_count_delete AFTER DELETE ON messages
     REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_messages_delete()`,
    `CREATE TRIGGER effects_count_insert AFTER INSERT ON effects
     REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_effects_insert()`,
    `CREATE TRIGGER effects_count_update AFTER UPDATE ON effects
     REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
     FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_effects_update()`,
    `CREATE TRIGGER effects_count_delete AFTER DELETE ON effects
     REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION onceq_count_effects_delete()`,
    "CREATE INDEX messages_dead ON messages (updated_at) WHERE state = 'dead'",
  ],
};
