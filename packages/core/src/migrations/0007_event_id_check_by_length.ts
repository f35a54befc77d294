import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: the `event_id` CHECK of 0003 says the same thing more cheaply. The
 * bounded repetition of `event_id ~ '^[!-~]{1,200}$'` costs the server's regex engine
 * about 30 µs per inserted row, most of what an enqueue INSERT costs it (200,000 rows
 * in psql: 6.3 s with it, 0.74 s with no CHECK). The same envelope, 1 to 200
 * characters each printable ASCII without space, as a length test and a search for one
 * character outside the range costs about 1 µs (0.91 s): the words SQLite's CHECK
 * already uses (`length(event_id) BETWEEN 1 AND 200 AND event_id NOT GLOB '*[^!-~]*'`).
 *
 * The new CHECK is validated against every stored id when the migration runs, holding
 * the table meanwhile (a few seconds a million messages).
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
