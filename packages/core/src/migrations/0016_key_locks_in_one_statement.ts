import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: `onceq_lock_keys` takes a whole array's advisory locks in one statement
 * instead of one statement per key.
 *
 * 0008's loop ran `PERFORM pg_advisory_xact_lock(…)` once per key, each a statement of
 * its own for PL/pgSQL to start and end; a statement that finishes a batch of 50 keyed
 * messages (0013's `onceq_release_next`) and an ordered enqueue of 1000 lines each took
 * their locks that way. One `PERFORM … FROM unnest(keys)` takes them in the array's
 * order, as the loop did: callers pass the keys sorted, so two transactions never wait
 * on each other's keys in a cycle.
 */
export const keyLocksInOneStatementSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    `CREATE OR REPLACE FUNCTION onceq_lock_keys(keys text[]) RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || k, 0))
       FROM unnest(keys) WITH ORDINALITY AS u(k, n)
       ORDER BY n;
     END $$`,
  ],
};
