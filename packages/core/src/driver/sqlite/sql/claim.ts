/**
 * SQLite's claim: the lazy recovery UPDATE, then the claim UPDATE, in the caller's
 * `BEGIN IMMEDIATE` transaction (which already holds the one write lock). Also the
 * trailing claim of the result template (complete.ts).
 */
import {
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../../machine.ts';
import type { ClaimedRow, ClaimInput } from '../../driver.ts';
import { sqliteDialect, sqlText } from '../../sql-text.ts';
import type { SqliteExecutor } from '../executor.ts';

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left under the limit their claim stamped
 * (`max_attempts`), else to `dead` with `lease_expired`. Only the claimed queue's leases.
 * ?1 now, ?2-?4 the error code and details, ?5 the queue.
 *
 * `INDEXED BY` pins the partial `messages_lease` index (the one index of the leased
 * rows): a missing index is an error at prepare time instead of a silent scan.
 */
const RECOVER = sqlText(
  'recover',
  1,
  `UPDATE messages INDEXED BY messages_lease SET
  state = CASE WHEN attempts < max_attempts THEN 'ready' ELSE 'dead' END,
  available_at = CASE WHEN attempts < max_attempts THEN lease_until ELSE available_at END,
  lease_until = NULL,
  last_error_code = ?2,
  last_error_detail = CASE WHEN attempts < max_attempts THEN ?3 ELSE ?4 END,
  updated_at = ?1
WHERE state = 'leased' AND lease_until <= ?1 AND queue = ?5`,
);

/**
 * ready → leased for up to ?3 claimable rows of queue ?4, oldest `(available_at,
 * event_id)` first, as one `UPDATE … RETURNING`; the UPDATE goes by primary key from the
 * picking subquery (the head of `messages_ready_queue`). ?1 the new `lease_until`, ?2
 * now, ?5 the `on_dead` and ?6 the `max_attempts` stamped on each claimed message (the
 * claiming worker's policy, which its recovery and `onceq doctor` then go by; never below
 * the attempt this claim gives, which it did allow).
 */
const CLAIM = sqlText(
  'claim',
  1,
  `UPDATE messages SET
  state = 'leased', attempts = attempts + 1, generation = generation + 1,
  lease_until = ?1, updated_at = ?2, on_dead = ?5, max_attempts = max(?6, attempts + 1)
WHERE event_id IN (
  SELECT event_id FROM messages WHERE state = 'ready' AND queue = ?4 AND available_at <= ?2
  ORDER BY available_at, event_id LIMIT ${sqliteDialect.limit(3)})
RETURNING event_id, generation, attempts, lease_until, payload, available_at`,
);

/** Recovery, then the claim, on the open transaction `x`. */
export function claimRows(x: SqliteExecutor, input: ClaimInput): ClaimedRow[] {
  const { now } = input;
  x.run(RECOVER, [now, LEASE_EXPIRED, RECOVERED_DETAIL, RECOVERED_DEAD_DETAIL, input.queue]);
  return inClaimOrder(
    x.all<ClaimedRow>(CLAIM, [
      now + input.leaseSeconds,
      now,
      input.limit,
      input.queue,
      input.onDead,
      input.maxAttempts,
    ]),
  );
}
