import type { BackendKind } from '../driver/backend.ts';

/**
 * A recorded outcome for handlers of your own. A done message has exactly one recorded
 * outcome: the lesson's money effect (an `effects` row, its CHECK rules unchanged) or,
 * when its handler returned a completion that wrote rows of its own, a `completions` row
 * carrying the completion's summary and no amount. The user's rows (refunds, zero, large
 * amounts, currencies) live in the user's own tables, so no amount rule of the store
 * stands in their way. `onceq doctor` checks that every done message has exactly one of
 * the two and no other message has either.
 */
export const completionsSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE completions (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      summary TEXT CHECK (length(summary) <= 200),
      created_at INTEGER NOT NULL
    ) STRICT`,
  ],
  postgres: [
    `CREATE TABLE completions (
      event_id TEXT NOT NULL PRIMARY KEY REFERENCES messages (event_id),
      summary TEXT CHECK (length(summary) <= 200),
      created_at BIGINT NOT NULL
    )`,
  ],
};
