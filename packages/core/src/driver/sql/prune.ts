/**
 * Prune's statements (maintenance/prune.ts), built from one definition for both
 * backends: the count of a dry run, the keyset page of candidates, and the chunk's
 * UPDATE that turns each row into a tombstone.
 */
import { sql } from 'kysely';
import type { PrunableState } from '../driver.ts';
import { defineStatement, type Statement } from '../prepared.ts';
import { stateLiteral } from '../shared-statements.ts';

/**
 * One statement per prunable state, with the state written as a literal so the planner
 * matches it against the leading column of `messages_claim` when it prepares it.
 */
function perState<Row>(
  build: (state: PrunableState) => Statement<Row>,
): (state: PrunableState) => Statement<Row> {
  const statements = { done: build('done'), dead: build('dead') };
  return (state) => statements[state];
}

/** Finished messages of `state`, not yet pruned, finished before `before`. */
export const prunableCount = perState((state) =>
  defineStatement<{ n: number }>(`prune-count-${state}`, ({ db, p }) =>
    db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('state', '=', stateLiteral(state))
      .where('pruned_at', 'is', null)
      .where('updated_at', '<', p.value<number>('before')),
  ),
);

/**
 * The next `n` candidates after the cursor (`availableAt`, `eventId`), in
 * `messages_claim` order (state, available_at, event_id): each page is a range scan from
 * the cursor, never a scan of every done row. The first page's cursor is `(-1, '')`.
 */
export const prunePage = perState((state) =>
  defineStatement<{ event_id: string; payload: string; available_at: number }>(
    `prune-page-${state}`,
    ({ db, p, n }) =>
      db
        .selectFrom('messages')
        .select(['event_id', 'payload', 'available_at'])
        .where('state', '=', stateLiteral(state))
        .where('pruned_at', 'is', null)
        .where('updated_at', '<', p.value<number>('before'))
        .where(
          sql<boolean>`(available_at, event_id) > (${p.value<number>('availableAt')}, ${p.value<string>('eventId')})`,
        )
        .orderBy('available_at')
        .orderBy('event_id')
        .limit(n),
  ),
);

/**
 * The tombstones of `n` rows: payload gone, `pruned_at` now, each its own SHA-256. The
 * `WHERE` repeats every condition of the page, so a message redriven since is skipped.
 */
export const pruneRows = perState((state) =>
  defineStatement(`prune-rows-${state}`, ({ db, p, n }) => {
    const ids = p.list<string>('ids', n);
    const hashes = p.list<string>('hashes', n);
    return db
      .updateTable('messages')
      .set({
        payload: null,
        pruned_at: p.value<number>('now'),
        payload_sha256: sql<string>`case event_id ${sql.join(
          ids.map((id, i) => sql`when ${id} then ${hashes[i]}`),
          sql` `,
        )} end`,
      })
      .where('event_id', 'in', ids)
      .where('state', '=', stateLiteral(state))
      .where('pruned_at', 'is', null)
      .where('updated_at', '<', p.value<number>('before'));
  }),
);
