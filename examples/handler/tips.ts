/**
 * An example handler module: handler v2's rules plus a new category, `tip`, whose
 * amount is capped at 10,000 cents. Run it with
 *
 *   onceq worker --handler ./examples/handler/tips.ts
 *   onceq work --handler ./examples/handler/tips.ts
 *   onceq redrive --all --dry-run --handler ./examples/handler/tips.ts
 *
 * A module exports `version` (a name for logs and output) and `handle(payload, context)`.
 * `handle` may be async: the worker runs it outside any transaction on the payload
 * stored under the message's current lease, then writes the effect it returns and the
 * ACK in one transaction fenced on that lease. Only that effect is exactly-once: a side
 * effect of its own (an HTTP call) is not, so make it idempotent (key it on `eventId`).
 * `context.signal` aborts when the worker lost the lease or is forced to stop.
 */
import {
  type Effect,
  type HandlerContext,
  type JsonObject,
  PermanentFailure,
  TemporaryFailure,
} from '@onceq/core';
import { v2 } from '@onceq/handler';

export const version = 'tips-v1';

/** The largest tip this handler accepts, in cents. */
export const MAX_TIP_CENTS = 10_000;

export async function handle(payload: JsonObject, context: HandlerContext): Promise<Effect> {
  if (context.signal.aborted) {
    // The result would be refused anyway (the ACK is fenced): say why and stop early.
    throw new TemporaryFailure('aborted', `${context.eventId}: the worker gave up this lease`);
  }
  if (payload.category !== 'tip') return v2(payload, context);
  const amount = payload.amount_cents;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) {
    throw new PermanentFailure('invalid_payload', 'a tip needs an integer amount_cents ≥ 1');
  }
  if (amount > MAX_TIP_CENTS) {
    throw new PermanentFailure('tip_too_large', `a tip is at most ${MAX_TIP_CENTS} cents`);
  }
  return { category: 'tip', amountCents: amount };
}
