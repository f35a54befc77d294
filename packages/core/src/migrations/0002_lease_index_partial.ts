import type { BackendKind } from '../driver/backend.ts';

/**
 * SQLite: `messages_lease` holds only the leased rows, `(lease_until) WHERE state =
 * 'leased'`.
 *
 * Lazy recovery is its only reader, and names it with `INDEXED BY` (see `recover` in
 * backend/sqlite/statements.ts). The full index of 0001 also held an entry for every ready, done and
 * dead row, so each enqueued row and each ACK paid for an index entry nobody reads;
 * without it, inserts and `bun run bench` enqueue were measurably faster.
 *
 * PostgreSQL keeps the full index: there the planner, choosing between the partial index
 * and `messages_claim` for the ACK's join, made apply slower in the same benchmark, and
 * PostgreSQL's recovery runs inside the claim statement anyway.
 */
export const leaseIndexPartial: Record<BackendKind, readonly string[]> = {
  sqlite: [
    'DROP INDEX messages_lease',
    "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
  ],
  postgres: [],
};
