import type { Store } from '../driver/backend.ts';
import type { ClaimedRow } from '../driver/driver.ts';
import { DEFAULT_QUEUE, isQueueName, QUEUE_NAME_RULE } from '../queues.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { Lease } from '../types.ts';

export interface ClaimOptions {
  /** Lease length in seconds. Default: the store's `leaseSeconds` (30). */
  leaseSeconds?: number;
  /** The queue to claim from. Default `default`. */
  queue?: string;
  /** Claim up to this many messages in the one transaction. Default 1. */
  limit?: number;
  /**
   * Awaited inside the claim transaction, before COMMIT, with the new leases: the locks
   * stay held meanwhile. Only for the `claim --hold` lab (see {@link holdClaim}).
   */
  beforeCommit?: (leases: readonly Lease[]) => Promise<void>;
}

/**
 * Claims the next claimable messages in one short write transaction (docs/protocol.md §5):
 * lazy recovery of expired leases first, then the first `ready` rows with
 * `available_at <= now` by `(available_at, event_id)`, each getting `attempts+1`,
 * `generation+1` and `lease_until = now + lease`. Every claim spends attempt budget.
 * Returns the leases in claim order, `[]` when nothing is claimable now.
 *
 * The statements are the backend's (`store.driver.claim`): on SQLite `BEGIN IMMEDIATE`,
 * the recovery UPDATE, the claim UPDATE, `COMMIT`; on PostgreSQL one statement that
 * commits by itself.
 */
export async function claimMany(store: Store, options: ClaimOptions = {}): Promise<Lease[]> {
  const limit = options.limit ?? 1;
  const leaseSeconds = options.leaseSeconds ?? store.protocol.leaseSeconds;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`claim limit must be a positive integer, got ${limit}`);
  }
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < 1) {
    throw new RangeError(`lease must be a positive whole number of seconds, got ${leaseSeconds}`);
  }
  const { beforeCommit } = options;
  const queue = options.queue ?? DEFAULT_QUEUE;
  if (!isQueueName(queue)) {
    throw new RangeError(`queue must be ${QUEUE_NAME_RULE}, got ${JSON.stringify(queue)}`);
  }
  const { maxAttempts, onDead } = store.protocol;
  const input = { limit, leaseSeconds, maxAttempts, queue, onDead };
  if (beforeCommit === undefined) {
    const leases = toLeases(await store.driver.claim(store, input));
    crashPoint('after-claim');
    return leases;
  }
  const leases = await store.transact(async (x) => {
    const now = store.clock();
    const leases = toLeases(await store.driver.claimInTransaction(x, { ...input, now }));
    await beforeCommit(leases);
    return leases;
  });
  crashPoint('after-claim');
  return leases;
}

/** Claimed rows as leases (also the claim {@link complete} fused into its write). */
export function toLeases(rows: readonly ClaimedRow[]): Lease[] {
  return rows.map(
    (row): Lease =>
      Object.freeze({
        eventId: row.event_id,
        generation: Number(row.generation),
        attempt: Number(row.attempts),
        leaseUntil: Number(row.lease_until),
        payload: row.payload,
        availableAt: Number(row.available_at),
      }),
  );
}

/** Claims one message; `null` when nothing is claimable now. See {@link claimMany}. */
export async function claim(
  store: Store,
  options: Omit<ClaimOptions, 'limit' | 'beforeCommit'> = {},
): Promise<Lease | null> {
  const [lease] = await claimMany(store, { ...options, limit: 1 });
  return lease ?? null;
}
