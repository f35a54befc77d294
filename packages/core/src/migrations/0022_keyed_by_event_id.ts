import type { BackendKind } from '../driver/backend.ts';
import { queueCountsAndClaimAttemptsSchema } from './0012_queue_counts_and_claim_attempts.ts';

/**
 * SQLite: `effects` and `completions` are stored by their primary key (`WITHOUT ROWID`):
 * one B-tree keyed by `event_id`, where a table with a rowid kept two, its rows by rowid
 * and a separate index of the ids (`sqlite_autoindex_…`). Every ACK that records an
 * effect or a completion wrote both, and every stored event kept its id twice in them.
 * Nothing reads either table by rowid: they are read by event id, or whole.
 *
 * SQLite cannot change a table into one without a rowid: each is made again under a new
 * name, its rows copied, the old table dropped (a child table: dropping it leaves no
 * parent row without its children, and its implicit delete fires no trigger), and the
 * new one renamed. The counter triggers of `effects` go with the old table and are made
 * again as 0012 wrote them. The old tables' pages go back to the file system at once on
 * a store made with `auto_vacuum = INCREMENTAL` (an older store reuses them), so neither
 * a new store nor an upgraded one starts with free pages the next prune would count.
 *
 * PostgreSQL stores every table as a heap beside its primary key index: nothing changes
 * there.
 */
const EFFECT_TRIGGERS = queueCountsAndClaimAttemptsSchema.sqlite.filter((s) =>
  s.startsWith('CREATE TRIGGER effects_'),
);

export const keyedByEventIdSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE effects_0022 (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      category TEXT NOT NULL CHECK (length(category) > 0),
      amount_cents INTEGER NOT NULL CHECK (amount_cents BETWEEN 1 AND 9999999),
      created_at INTEGER NOT NULL
    ) WITHOUT ROWID, STRICT`,
    `INSERT INTO effects_0022 (event_id, category, amount_cents, created_at)
     SELECT event_id, category, amount_cents, created_at FROM effects ORDER BY event_id`,
    'DROP TABLE effects',
    'ALTER TABLE effects_0022 RENAME TO effects',
    ...EFFECT_TRIGGERS,
    `CREATE TABLE completions_0022 (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      summary TEXT CHECK (length(summary) <= 200),
      created_at INTEGER NOT NULL
    ) WITHOUT ROWID, STRICT`,
    `INSERT INTO completions_0022 (event_id, summary, created_at)
     SELECT event_id, summary, created_at FROM completions ORDER BY event_id`,
    'DROP TABLE completions',
    'ALTER TABLE completions_0022 RENAME TO completions',
    'PRAGMA incremental_vacuum',
  ],
  postgres: [],
};
