import type { BackendKind } from '../driver/backend.ts';

/**
 * The initial schema (docs/protocol.md §4). The CHECKs pin the states, non-negative counters, the
 * amount range, and `lease_until IS NOT NULL` exactly when the state is `leased`.
 * Two composite indexes keep every hot query O(log n) whatever the number of done rows:
 * `messages_claim (state, available_at, event_id)` gives a claim the head of the ready
 * rows already in claim order (no sort) and `status` a covering scan for its counts;
 * `messages_lease (state, lease_until)` gives lazy recovery the expired leases as a
 * range (0002 narrows it to the leased rows on SQLite). (Partial indexes `WHERE state = 'ready'` looked smaller, but without
 * statistics SQLite's planner preferred a plain state index and sorted every ready
 * row on each claim; see the query plans in tests/conformance/query-plans.test.ts.)
 */
export const initialSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE messages (
      event_id TEXT NOT NULL PRIMARY KEY CHECK (length(event_id) = 5 AND event_id GLOB 'E[0-9][0-9][0-9][0-9]'),
      payload TEXT NOT NULL CHECK (length(payload) >= 2),
      state TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'done', 'dead')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
      available_at INTEGER NOT NULL CHECK (available_at >= 0),
      lease_until INTEGER CHECK (lease_until >= 0),
      last_error_code TEXT,
      last_error_detail TEXT,
      enqueued_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      CHECK ((state = 'leased') = (lease_until IS NOT NULL))
    ) STRICT`,
    `CREATE TABLE effects (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      category TEXT NOT NULL CHECK (length(category) > 0),
      amount_cents INTEGER NOT NULL CHECK (amount_cents BETWEEN 1 AND 9999999),
      created_at INTEGER NOT NULL
    ) STRICT`,
    'CREATE INDEX messages_claim ON messages (state, available_at, event_id)',
    'CREATE INDEX messages_lease ON messages (state, lease_until)',
    'CREATE INDEX effects_category ON effects (category, amount_cents)',
  ],
  postgres: [
    `CREATE TABLE messages (
      event_id TEXT NOT NULL PRIMARY KEY CHECK (event_id ~ '^E[0-9]{4}$'),
      payload TEXT NOT NULL CHECK (length(payload) >= 2),
      state TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'done', 'dead')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
      available_at BIGINT NOT NULL CHECK (available_at >= 0),
      lease_until BIGINT CHECK (lease_until >= 0),
      last_error_code TEXT,
      last_error_detail TEXT,
      enqueued_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      CHECK ((state = 'leased') = (lease_until IS NOT NULL))
    )`,
    `CREATE TABLE effects (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      category TEXT NOT NULL CHECK (length(category) > 0),
      amount_cents INTEGER NOT NULL CHECK (amount_cents BETWEEN 1 AND 9999999),
      created_at BIGINT NOT NULL
    )`,
    'CREATE INDEX messages_claim ON messages (state, available_at, event_id)',
    'CREATE INDEX messages_lease ON messages (state, lease_until)',
    'CREATE INDEX effects_category ON effects (category, amount_cents)',
  ],
};
