/**
 * The store's recorded settings (`onceq_meta`) and the walk over every stored id that a
 * policy change checks: statements both backends run with the same words.
 */
import { statement } from '../sql-text.ts';

/** The `onceq_meta` key of the id policy. */
export const ID_POLICY_KEY = 'id_policy';

/**
 * The policy row, read inside a write transaction. Where rows lock (PostgreSQL) it is
 * read `FOR SHARE`: a concurrent policy change (which locks it `FOR UPDATE`) waits for
 * running enqueues, and later enqueues wait for it, so no id that the new policy refuses
 * can slip in while the change checks the stored ids.
 */
export const readIdPolicyRow = statement(
  'id-policy-read',
  (d) =>
    `SELECT value FROM ${d.table('onceq_meta')} WHERE key = '${ID_POLICY_KEY}'${d.rowLocks ? ' FOR SHARE' : ''}`,
);

/** The policy row, locked `FOR UPDATE` where rows lock: the start of a policy change. */
export const lockIdPolicyRow = statement(
  'id-policy-lock',
  (d) =>
    `SELECT value FROM ${d.table('onceq_meta')} WHERE key = '${ID_POLICY_KEY}'${d.rowLocks ? ' FOR UPDATE' : ''}`,
);

/** Writes the policy text (?1), creating the row if missing. */
export const writeIdPolicy = statement(
  'id-policy-write',
  (d) =>
    `INSERT INTO ${d.table('onceq_meta')} (key, value) VALUES ('${ID_POLICY_KEY}', ${d.param(1)})
ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
);

/** Any one stored message: whether the store is empty. */
export const anyMessage = statement(
  'any-message',
  (d) => `SELECT event_id FROM ${d.table('messages')} LIMIT 1`,
);

/** Rows per keyset page of {@link idPage}. */
export const ID_PAGE_SIZE = 5000;

/** The next page of stored event ids after ?1 (`''` for the first), in id order. */
export const idPage = statement(
  'id-page',
  (d) =>
    `SELECT event_id FROM ${d.table('messages')} WHERE event_id > ${d.param(1)} ORDER BY event_id LIMIT ${ID_PAGE_SIZE}`,
);

/** The names of the applied migrations, in order. */
export const appliedMigrations = statement(
  'applied-migrations',
  (d) => `SELECT name FROM ${d.table('onceq_migrations')} ORDER BY name`,
);
