import type { BackendKind } from '../driver/backend.ts';

/**
 * PostgreSQL: onceq's own state changes count themselves. The two statement triggers of
 * 0004 that fired on the hot path, `messages_count_update` (every claim ran it twice: for
 * its recovery UPDATE, even when that touched no row, and for its lease UPDATE; every
 * ACK once) and `effects_count_insert` (every ACK with effects), are dropped: each run
 * was a PL/pgSQL call over transition tables that copied every changed row, about a
 * third of the server's CPU per message at batch 1. Instead each statement that moves
 * messages between states, or records effects, appends its delta rows to `onceq_counts`
 * itself, in a data-modifying CTE of the same statement (claim, recovery and the ACKs)
 * or in the same transaction (fail, release, redrive): the write and its counter change
 * still commit as one unit, so `status` stays one consistent read.
 *
 * The triggers of the cold writes stay: `messages_count_insert` (enqueue),
 * `messages_count_delete`, `effects_count_update` and `effects_count_delete`. So a manual
 * SQL `UPDATE` of `messages.state` or `INSERT INTO effects` is no longer counted on
 * PostgreSQL: `onceq doctor` reports the drift (`counters`) and `doctor --fix` recounts.
 *
 * SQLite keeps its row triggers: one writer at a time, each a B-tree update of a page
 * already in cache.
 */
export const countsInStatements: Record<BackendKind, readonly string[]> = {
  sqlite: [],
  postgres: [
    'DROP TRIGGER messages_count_update ON messages',
    'DROP TRIGGER effects_count_insert ON effects',
    'DROP FUNCTION onceq_count_messages_update()',
    'DROP FUNCTION onceq_count_effects_insert()',
  ],
};
