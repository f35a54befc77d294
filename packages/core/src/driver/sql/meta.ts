/**
 * The store's recorded settings (`onceq_meta`) and the walk over every stored id that a
 * policy change checks: statements both backends build from one definition.
 */
import { defineStatement } from '../prepared.ts';

/** The `onceq_meta` key of the id policy. */
export const ID_POLICY_KEY = 'id_policy';

/**
 * The policy row, read inside a write transaction. On a backend with row locks
 * (PostgreSQL) it is read `FOR SHARE`: a concurrent policy change (which locks it
 * `FOR UPDATE`) waits for running enqueues, and later enqueues wait for it, so no id
 * that the new policy refuses can slip in while the change checks the stored ids.
 */
export const readIdPolicyRow = defineStatement<{ value: string }>(
  'id-policy-read',
  ({ db, capabilities }) => {
    const query = db.selectFrom('onceq_meta').select('value').where('key', '=', ID_POLICY_KEY);
    return capabilities.skipLocked ? query.forShare() : query;
  },
);

/** The policy row, locked `FOR UPDATE` where rows lock: the start of a policy change. */
export const lockIdPolicyRow = defineStatement<{ value: string }>(
  'id-policy-lock',
  ({ db, capabilities }) => {
    const query = db.selectFrom('onceq_meta').select('value').where('key', '=', ID_POLICY_KEY);
    return capabilities.skipLocked ? query.forUpdate() : query;
  },
);

/** Writes the policy text (`value`), creating the row if missing. */
export const writeIdPolicy = defineStatement('id-policy-write', ({ db, p }) => {
  const value = p.value<string>('value');
  return db
    .insertInto('onceq_meta')
    .values({ key: ID_POLICY_KEY, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }));
});

/** Any one stored message: whether the store is empty. */
export const anyMessage = defineStatement<{ event_id: string }>('any-message', ({ db }) =>
  db.selectFrom('messages').select('event_id').limit(1),
);

/** Rows per keyset page of {@link idPage}. */
export const ID_PAGE_SIZE = 5000;

/** The next page of stored event ids after `after` (`''` for the first), in id order. */
export const idPage = defineStatement<{ event_id: string }>('id-page', ({ db, p }) =>
  db
    .selectFrom('messages')
    .select('event_id')
    .where('event_id', '>', p.value<string>('after'))
    .orderBy('event_id')
    .limit(ID_PAGE_SIZE),
);
