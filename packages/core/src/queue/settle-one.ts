import type { Store } from '../driver/backend.ts';
import type { SettleWrite } from '../driver/statements.ts';
import { LeaseLostError } from '../errors.ts';
import { afterFailure, fenceViolation } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { ApplyOutcome, Effect, LeaseRef } from '../types.ts';
import type { ApplyManyResult } from './apply.ts';
import type { HandlerResult } from './handler-result.ts';

/** A lease as one's own claim returned it: the attempt it counted, when it runs out. */
export interface ClaimedLease extends LeaseRef {
  readonly attempt: number;
  readonly leaseUntil: number;
}

/**
 * Records one handler result computed outside any transaction as **one write of its
 * own**, with no fence read in front: the effect and the ACK together (one statement on
 * PostgreSQL, so a message costs two round trips with its claim), or the failure. The
 * fence is the SQL `WHERE` of that write (state `leased`, this generation,
 * `lease_until > now`, `now` read after the handler); zero rows means the lease is lost
 * and nothing was written, effect included.
 *
 * Only for a lease from this process's own claim: the handler ran on the payload that
 * claim read under this generation (a stored payload never changes), and `attempt` is
 * what that claim counted, which nothing can change without the fence noticing (every
 * other claim bumps the generation; a release or recovery leaves the row not leased).
 * That is the exactly-once argument of {@link settleMany}, with the fence read left to
 * SQL. `attempt` is needed only for a failure: without one, use {@link settleMany}.
 *
 * Crash points: `after-handler` before the write, `after-effect-insert` and `after-ack`
 * once written (before COMMIT on SQLite; on PostgreSQL the one statement has committed),
 * `after-commit` after it.
 */
export function settleOne(
  store: Store,
  lease: ClaimedLease,
  result: HandlerResult,
): Promise<ApplyManyResult> {
  return settleAloneAt(store, lease, lease.leaseUntil, result, (now) =>
    'effect' in result
      ? { effect: result.effect, createdAt: now }
      : { move: afterFailure(store.protocol, lease.attempt, result.failure, now) },
  );
}

/**
 * {@link settleOne} for a success whose lease comes without its attempt or a trusted end
 * (the worker's settle of one message, whose lease a heartbeat may have extended): the
 * effect and the ACK as one fenced write. With no `leaseUntil`, the SQL fence alone
 * finds an expired lease.
 */
export function settleEffect(
  store: Store,
  lease: LeaseRef & { readonly leaseUntil?: number },
  effect: Effect,
): Promise<ApplyManyResult> {
  return settleAloneAt(store, lease, lease.leaseUntil, { effect }, (now) => ({
    effect,
    createdAt: now,
  }));
}

async function settleAloneAt(
  store: Store,
  lease: LeaseRef,
  leaseUntil: number | undefined,
  result: HandlerResult,
  writeAt: (now: number) => SettleWrite,
): Promise<ApplyManyResult> {
  crashPoint('after-handler');
  const now = store.clock();
  if (leaseUntil !== undefined && now >= leaseUntil) {
    const why = `the lease expired at ${leaseUntil} during apply (now ${now})`;
    return { outcomes: [], lost: [new LeaseLostError(lease.eventId, lease.generation, why)] };
  }
  const write = writeAt(now);
  if ((await store.statements.settleAlone(store, lease, write, now)) !== 1) {
    return { outcomes: [], lost: await explainLost(store, [lease], now) };
  }
  crashPoint('after-commit');
  return { outcomes: [outcomeOf(lease, result, write)], lost: [] };
}

/** Why the fenced write matched none of `leases`, read after the fact (the rare path). */
export async function explainLost(
  store: Store,
  leases: readonly LeaseRef[],
  now: number,
): Promise<LeaseLostError[]> {
  const rows = await store.transact((x) => store.statements.readFenced(x, leases));
  const byId = new Map(rows.map((row) => [row.event_id, row]));
  return leases.map((lease) => {
    const why = fenceViolation(byId.get(lease.eventId), lease, now);
    return new LeaseLostError(
      lease.eventId,
      lease.generation,
      why ?? 'the fenced write matched no row',
    );
  });
}

function outcomeOf(lease: LeaseRef, result: HandlerResult, write: SettleWrite): ApplyOutcome {
  if ('effect' in result) return { eventId: lease.eventId, outcome: 'done', effect: result.effect };
  const { code, detail = '' } = result.failure;
  if (!('move' in write) || write.move.state === 'dead') {
    return { eventId: lease.eventId, outcome: 'dead', code, detail };
  }
  return {
    eventId: lease.eventId,
    outcome: 'retry',
    code,
    detail,
    availableAt: write.move.availableAt,
  };
}
