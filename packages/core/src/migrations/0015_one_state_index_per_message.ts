import type { BackendKind } from '../driver/backend.ts';

/**
 * Each message is in one index by its state, on both backends: a ready one in
 * `messages_ready_queue` (queue, available_at, event_id; the claim's, since 0010), a
 * leased one in `messages_lease` (lease_until; recovery's and the next expiry's), any
 * other in `messages_state` (state, available_at, event_id; prune's and forget's pages,
 * the dead and waiting reads).
 *
 * Before, `messages_claim` (state, available_at, event_id) held every message, whatever
 * its state, and on PostgreSQL `messages_lease` was a full index (state, lease_until) as
 * well: an enqueue wrote two or three index entries per message beside its primary key,
 * and every claim and ACK moved it in indexes nobody reads it by in that state. The
 * index by state is made again without the ready and leased messages, as
 * `messages_state`; PostgreSQL's `messages_lease` becomes SQLite's partial one (0002).
 * What reads ready messages of every queue (the status snapshot's oldest ready and next
 * due, the wake-up's next due, `work`'s backoff report) walks `messages_ready_queue` one
 * queue at a time (driver/sql/ready.ts).
 *
 * The condition names each state it keeps instead of `state <> 'ready' AND …`: SQLite
 * uses a partial index only for a query whose own terms imply the index's condition, and
 * it infers that from an equality (`state = 'done'` implies a chain of `OR`s holding it),
 * never from an inequality. PostgreSQL proves both; one text serves the two. Without
 * leased rows in `messages_state`, a claim's expired leases can only be read by
 * `messages_lease`, whatever the planner's statistics say about how many rows are leased.
 */
const FINISHED_OR_WAITING =
  "state = 'done' OR state = 'dead' OR state = 'waiting' OR state = 'skipped'";

const stateIndex = [
  'DROP INDEX messages_claim',
  `CREATE INDEX messages_state ON messages (state, available_at, event_id) WHERE ${FINISHED_OR_WAITING}`,
];

export const oneStateIndexPerMessageSchema: Record<BackendKind, readonly string[]> = {
  sqlite: stateIndex,
  postgres: [
    ...stateIndex,
    'DROP INDEX messages_lease',
    "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
  ],
};
