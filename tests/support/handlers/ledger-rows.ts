/**
 * The handler module of ledger.ts with its row declared instead of written
 * (`--handler tests/support/handlers/ledger-rows.ts`): each message becomes a refund of
 * its `amount_cents` in `user_ledger`, inserted by onceq from the completion's `insert`.
 */
import type { Completion, HandlerContext, JsonObject } from '@onceq/core';

export const version = 'ledger-rows-test';

export function handle(payload: JsonObject, context: HandlerContext): Completion {
  return {
    insert: { user_ledger: { event_id: context.eventId, amount: -Number(payload.amount_cents) } },
    summary: `refund ${context.eventId}`,
  };
}
