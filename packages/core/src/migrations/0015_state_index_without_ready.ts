import type { BackendKind } from '../driver/backend.ts';

/**
 * A ready message is in one index by state, not two, on both backends.
 *
 * Since 0010 every claim reads `messages_ready_queue` (queue, available_at, event_id),
 * which holds exactly the ready messages; `messages_claim` (state, available_at,
 * event_id) held them too, so an enqueue wrote two index entries for each message
 * besides its primary key, and a claim took it out of both. The index by state is made
 * again without the ready ones, as `messages_state`: prune's and forget's pages, and the
 * dead, leased and waiting reads, go by it as before. What reads ready messages of every
 * queue (the status snapshot's oldest ready and next due, the wake-up's next due) walks
 * `messages_ready_queue` one queue at a time (driver/sql/ready.ts).
 *
 * The condition names each state it keeps instead of `state <> 'ready'`: SQLite uses a
 * partial index only for a query whose own terms imply the index's condition, and it
 * infers that from an equality (`state = 'done'` implies a chain of `OR`s holding it),
 * never from an inequality. PostgreSQL proves both; one text serves the two.
 */
const NOT_READY =
  "state = 'leased' OR state = 'done' OR state = 'dead' OR state = 'waiting' OR state = 'skipped'";

const statements = [
  'DROP INDEX messages_claim',
  `CREATE INDEX messages_state ON messages (state, available_at, event_id) WHERE ${NOT_READY}`,
];

export const stateIndexWithoutReadySchema: Record<BackendKind, readonly string[]> = {
  sqlite: statements,
  postgres: statements,
};
