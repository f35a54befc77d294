import type { BackendKind } from '../driver/backend.ts';

/**
 * `effects_category (category, amount_cents)` is dropped, on both backends.
 *
 * It served the totals by category before the maintained counters (0004): since then
 * `status` reads `onceq_counts`, and what still sums effects by category (`onceq doctor`'s
 * check of the counters, their recount, `backup`'s summary) reads every effect anyway,
 * from the table as well as from the index. Yet every ACK that records an effect
 * inserted an entry into it at a random place (a category, then an amount), so each
 * commit dirtied about one index page per effect: on a store of a million effects a
 * batch's COMMIT wrote four times the pages, and the index was 17 bytes (SQLite) or 26
 * (PostgreSQL) of every stored event.
 */
export const effectsWithoutCategoryIndexSchema: Record<BackendKind, readonly string[]> = {
  sqlite: ['DROP INDEX effects_category'],
  postgres: ['DROP INDEX effects_category'],
};
