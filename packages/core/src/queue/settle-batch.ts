import type { Store } from '../driver/backend.ts';
import type { Success } from '../driver/statements.ts';
import type { LeaseLostError } from '../errors.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { ApplyOutcome, LeaseRef } from '../types.ts';
import type { ApplyManyResult } from './apply.ts';
import { type Settlement, settleMany } from './settle.ts';
import { explainLost } from './settle-one.ts';

/**
 * Records a batch of handler results computed on the payloads of this process's own
 * claim, **without a fence read in front** where the backend writes effects and ACKs in
 * one statement (PostgreSQL's `ackManyAlone`): the successes are one fenced statement
 * committing by itself, each message fenced on its own in its `WHERE` (state `leased`,
 * this generation, `lease_until > now`, `now` read after the handlers), an effect row
 * only for a message it marked done. A message it did not mark done lost its lease and
 * nothing of it was written; why is read after the fact (the rare path). Failures, which
 * need the attempts a fence read finds, go through {@link settleMany}.
 *
 * Why no read is needed: the exactly-once argument of {@link settleMany} and settle-one.ts.
 * Every handler ran on the payload the claim read under this generation, and a stored
 * payload never changes; every other claim bumps the generation, a release or recovery
 * leaves the row not leased; so the fenced write commits at most one result per
 * message, and that result was computed from the stored payload. What the read added
 * was only the row locks and the early "lost" answer; the `WHERE` gives both.
 *
 * On PostgreSQL a batch of 500 then costs two statements (claim, this) instead of five
 * (claim, BEGIN, `SELECT … FOR UPDATE` of 500 payloads, effects + ACK, COMMIT). A backend
 * without `ackManyAlone` (SQLite) records the batch exactly as {@link settleMany} does.
 *
 * Crash points: `after-handler` before the write, `after-effect-insert` and `after-ack`
 * after the successes' statement (it has committed), `after-commit` after it; the
 * failures' transaction fires its own.
 */
export async function settleClaimed(
  store: Store,
  settlements: readonly Settlement[],
): Promise<ApplyManyResult> {
  const { statements } = store;
  if (statements.ackManyAlone === undefined) return settleMany(store, settlements);
  crashPoint('after-handler');
  const succeeded: Success[] = [];
  const failures: Settlement[] = [];
  for (const { lease, result } of settlements) {
    if ('effect' in result) succeeded.push({ lease, effect: result.effect });
    else failures.push({ lease, result });
  }
  const outcomes: ApplyOutcome[] = [];
  const lost: LeaseLostError[] = [];
  if (succeeded.length > 0) {
    const now = store.clock();
    const acked = new Set(await statements.ackManyAlone(store, succeeded, now, now));
    crashPoint('after-commit');
    const missed: LeaseRef[] = [];
    for (const { lease, effect } of succeeded) {
      if (acked.has(lease.eventId))
        outcomes.push({ eventId: lease.eventId, outcome: 'done', effect });
      else missed.push(lease);
    }
    if (missed.length > 0) lost.push(...(await explainLost(store, missed, now)));
  }
  if (failures.length > 0) {
    const recorded = await settleMany(store, failures);
    outcomes.push(...recorded.outcomes);
    lost.push(...recorded.lost);
  }
  return { outcomes, lost };
}
