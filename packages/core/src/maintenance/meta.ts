/**
 * The store's recorded settings (`onceq_meta`, migration 0003): today the event id
 * policy. Read inside enqueue's transaction, changed only by {@link setIdPolicy}.
 */
import { sql, type Transaction } from 'kysely';
import type { Store } from '../driver/backend.ts';
import { defineStatement } from '../driver/prepared.ts';
import { OnceqError } from '../errors.ts';
import type { Database } from '../schema.ts';
import {
  formatIdPolicy,
  type IdPolicy,
  idMatcher,
  LESSON_POLICY,
  parseIdPolicy,
} from './id-policy.ts';

/** The `onceq_meta` key of the id policy. */
export const ID_POLICY_KEY = 'id_policy';

/**
 * Changing the id policy was refused: stored ids do not fit the new one, or a store that
 * already holds messages was opened with another policy. Nothing changed. Exit code 4.
 */
export class IdPolicyRefusedError extends OnceqError {
  readonly offenders: readonly string[];
  constructor(message: string, offenders: readonly string[] = []) {
    super('id_policy_refused', 4, message);
    this.offenders = offenders;
  }
}

/**
 * The policy row, read inside a write transaction. On a backend with row locks
 * (PostgreSQL) it is read `FOR SHARE`: a concurrent {@link setIdPolicy} (which locks it
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

/** The store's id policy (`lesson` when none is recorded). */
export async function getIdPolicy(store: Store): Promise<IdPolicy> {
  const row = await store.db
    .selectFrom('onceq_meta')
    .select('value')
    .where('key', '=', ID_POLICY_KEY)
    .executeTakeFirst();
  return row === undefined ? LESSON_POLICY : parseIdPolicy(row.value);
}

/** At most this many refused ids are named in the error. */
const SHOWN_OFFENDERS = 5;

/**
 * Changes the store's id policy, explicitly. Every stored event id (pruned messages
 * included: their ids keep deduplicating) must fit the new policy; otherwise nothing
 * changes and {@link IdPolicyRefusedError} names the first few that do not. One write
 * transaction: on SQLite it holds the write lock while it reads every id (about a second
 * per million messages); on PostgreSQL it locks the policy row, so enqueues wait.
 */
export async function setIdPolicy(
  store: Store,
  policy: IdPolicy,
): Promise<{ previous: IdPolicy; policy: IdPolicy; checked: number }> {
  return store.writeTransaction(async (trx) => {
    const previous = await lockPolicy(trx, store);
    const { checked, offenders, refused } = await findOffenders(trx, policy);
    if (refused > 0) {
      throw new IdPolicyRefusedError(
        `id policy ${formatIdPolicy(policy)} refused: ${refused} stored event id${refused === 1 ? '' : 's'} would not fit (${offenders.map((id) => JSON.stringify(id)).join(', ')}${refused > offenders.length ? ', …' : ''}); the policy stays ${formatIdPolicy(previous)}`,
        offenders,
      );
    }
    await writePolicy(trx, policy);
    return { previous, policy, checked };
  });
}

/**
 * Applies `openStore`'s `idPolicy` option: the policy a store is created with. Same
 * policy: nothing to do. An empty store (no message at all) takes the new policy. A store
 * holding messages under another policy is refused with {@link IdPolicyRefusedError}:
 * changing it is the explicit `setIdPolicy` (`onceq id-policy set`).
 */
export async function adoptIdPolicy(store: Store, policy: IdPolicy): Promise<void> {
  const wanted = formatIdPolicy(policy);
  const current = await getIdPolicy(store);
  if (formatIdPolicy(current) === wanted) return;
  await store.writeTransaction(async (trx) => {
    const previous = await lockPolicy(trx, store);
    if (formatIdPolicy(previous) === wanted) return;
    const any = await trx.selectFrom('messages').select('event_id').limit(1).executeTakeFirst();
    if (any !== undefined) {
      throw new IdPolicyRefusedError(
        `the store ${store.location} already holds messages under id policy ${formatIdPolicy(previous)}, not ${wanted}; change it with onceq id-policy set ${wanted}`,
      );
    }
    await writePolicy(trx, policy);
  });
}

async function lockPolicy(trx: Transaction<Database>, store: Store): Promise<IdPolicy> {
  let query = trx.selectFrom('onceq_meta').select('value').where('key', '=', ID_POLICY_KEY);
  if (store.capabilities.skipLocked) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row === undefined ? LESSON_POLICY : parseIdPolicy(row.value);
}

async function writePolicy(trx: Transaction<Database>, policy: IdPolicy): Promise<void> {
  const value = formatIdPolicy(policy);
  await trx
    .insertInto('onceq_meta')
    .values({ key: ID_POLICY_KEY, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
    .execute();
}

/** Rows per keyset page when every stored id is checked. */
const SCAN_PAGE = 5000;

/** Walks every stored event id by keyset pages and counts those `policy` refuses. */
export async function findOffenders(
  trx: Transaction<Database> | Store['db'],
  policy: IdPolicy,
): Promise<{ checked: number; refused: number; offenders: string[] }> {
  const fits = idMatcher(policy);
  const offenders: string[] = [];
  let refused = 0;
  let checked = 0;
  let after: string | null = null;
  for (;;) {
    let query = trx.selectFrom('messages').select('event_id').orderBy('event_id').limit(SCAN_PAGE);
    if (after !== null) query = query.where('event_id', '>', after);
    const rows = await query.execute();
    for (const { event_id } of rows) {
      if (!fits(event_id)) {
        refused++;
        if (offenders.length < SHOWN_OFFENDERS) offenders.push(event_id);
      }
    }
    checked += rows.length;
    if (rows.length < SCAN_PAGE) break;
    after = (rows[rows.length - 1] as { event_id: string }).event_id;
  }
  return { checked, refused, offenders };
}

/** Kept for the doctor: the raw policy text, to report an unreadable one. */
export async function readIdPolicyText(store: Store): Promise<string | null> {
  const { rows } = await sql<{
    value: string;
  }>`select value from onceq_meta where key = ${ID_POLICY_KEY}`.execute(store.db);
  return rows[0]?.value ?? null;
}
