import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: the `event_id` CHECK of 0003 says the same thing more cheaply. The
 * bounded repetition of `event_id ~ '^[!-~]{1,200}$'` runs the server's regex engine
 * on every inserted row, most of what an enqueue INSERT cost it. The same envelope, 1
 * to 200 characters each printable ASCII without space, as a length test and a search
 * for one character outside the range, costs a small part of that: the words SQLite's
 * CHECK already uses (`length(event_id) BETWEEN 1 AND 200 AND event_id NOT GLOB
 * '*[^!-~]*'`).
 *
 * The new CHECK is validated against every stored id when the migration runs, holding
 * the table meanwhile (seconds for a store of millions of messages).
 */
export const eventIdCheckByLength: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    `ALTER TABLE messages
      DROP CONSTRAINT messages_event_id_check,
      ADD CONSTRAINT messages_event_id_check
        CHECK (length(event_id) BETWEEN 1 AND 200 AND event_id !~ '[^!-~]')`,
  ],
};
