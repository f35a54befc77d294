/**
 * The store's recorded settings (`onceq_meta`, migration 0003): today the event id
 * policy. Read inside enqueue's transaction, changed only by {@link setIdPolicy}.
 */
import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/executor.ts';
import { keepClassNames, OnceqError } from '../errors.ts';
import {
  formatIdPolicy,
  type IdPolicy,
  idMatcher,
  LESSON_POLICY,
  parseIdPolicy,
} from '../input/id-policy.ts';

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
keepClassNames({ IdPolicyRefusedError });

/** The store's id policy (`lesson` when none is recorded). */
export async function getIdPolicy(store: Store): Promise<IdPolicy> {
  const text = await readIdPolicyText(store);
  return text === null ? LESSON_POLICY : parseIdPolicy(text);
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
  return store.transact(async (x) => {
    const previous = await lockPolicy(store, x);
    const { checked, offenders, refused } = await findOffenders(store, x, policy);
    if (refused > 0) {
      throw new IdPolicyRefusedError(
        `id policy ${formatIdPolicy(policy)} refused: ${refused} stored event id${refused === 1 ? '' : 's'} would not fit (${offenders.map((id) => JSON.stringify(id)).join(', ')}${refused > offenders.length ? ', …' : ''}); the policy stays ${formatIdPolicy(previous)}`,
        offenders,
      );
    }
    await writePolicy(store, x, policy);
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
  await store.transact(async (x) => {
    const previous = await lockPolicy(store, x);
    if (formatIdPolicy(previous) === wanted) return;
    if (await store.driver.hasMessages(x)) {
      throw new IdPolicyRefusedError(
        `the store ${store.location} already holds messages under id policy ${formatIdPolicy(previous)}, not ${wanted}; change it with onceq id-policy set ${wanted}`,
      );
    }
    await writePolicy(store, x, policy);
  });
}

async function lockPolicy(store: Store, x: Executor): Promise<IdPolicy> {
  const text = await store.driver.lockIdPolicy(x);
  return text === undefined ? LESSON_POLICY : parseIdPolicy(text);
}

async function writePolicy(store: Store, x: Executor, policy: IdPolicy): Promise<void> {
  await store.driver.writeIdPolicy(x, formatIdPolicy(policy));
}

/** Walks every stored event id by keyset pages and counts those `policy` refuses. */
export async function findOffenders(
  store: Store,
  x: Executor,
  policy: IdPolicy,
): Promise<{ checked: number; refused: number; offenders: string[] }> {
  const fits = idMatcher(policy);
  const offenders: string[] = [];
  let refused = 0;
  let checked = 0;
  // Every stored id is non-empty, so '' comes before the first.
  let after = '';
  for (;;) {
    const { ids, pageSize } = await store.driver.idPage(x, after);
    for (const event_id of ids) {
      if (!fits(event_id)) {
        refused++;
        if (offenders.length < SHOWN_OFFENDERS) offenders.push(event_id);
      }
    }
    checked += ids.length;
    if (ids.length < pageSize) break;
    after = ids[ids.length - 1] as string;
  }
  return { checked, refused, offenders };
}

/** Kept for the doctor: the raw policy text, to report an unreadable one. */
export async function readIdPolicyText(store: Store): Promise<string | null> {
  return (await store.read((x) => store.driver.readIdPolicy(x))) ?? null;
}
