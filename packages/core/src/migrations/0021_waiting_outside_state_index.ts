import type { BackendKind } from '../driver/backend.ts';

/**
 * A `waiting` message (a keyed one behind its key's unfinished head) is in no index by
 * state any more, on both backends: `messages_state` keeps the finished ones only (done,
 * dead, skipped), what prune, forget and the dead reads walk.
 *
 * Nothing reads waiting messages by that index: a key's next message is found by its
 * position (`messages_key` on SQLite, `message_keys` on PostgreSQL) and released by
 * primary key, the counters count them, and the blocked keys count what waits behind
 * each head by position. Yet each one had an entry at `(waiting, available_at,
 * event_id)`, written at enqueue and removed at its release: with random event ids the
 * release of a batch's keys removed entries from pages all over the index, the biggest
 * part of it on an ordered store, and every such page was written again at the commit.
 * A listing of waiting messages (`onceq list --state waiting`) reads the keyed messages
 * instead (on SQLite through `messages_key`: a waiting message always has a key).
 */
const finishedOnly = [
  'DROP INDEX messages_state',
  `CREATE INDEX messages_state ON messages (state, available_at, event_id)
     WHERE state = 'done' OR state = 'dead' OR state = 'skipped'`,
];

export const waitingOutsideStateIndexSchema: Record<BackendKind, readonly string[]> = {
  sqlite: finishedOnly,
  postgres: finishedOnly,
};
