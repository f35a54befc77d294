/**
 * A handler module writing rows of its own (`--handler tests/support/handlers/ledger.ts`):
 * each message becomes a refund of its `amount_cents` in the table `user_ledger`
 * (`event_id` primary key, `amount`), written in the ACK's transaction. The table is
 * the test's to create. No onceq code is imported at run time.
 */
import type { Completion, HandlerContext, JsonObject } from '@onceq/core';

export const version = 'ledger-test';

export function handle(payload: JsonObject, context: HandlerContext): Completion {
  const amount = -Number(payload.amount_cents);
  return {
    async write(tx) {
      const sql =
        tx.kind === 'sqlite'
          ? 'INSERT INTO user_ledger (event_id, amount) VALUES (?, ?)'
          : 'INSERT INTO user_ledger (event_id, amount) VALUES ($1, $2)';
      await tx.query(sql, [context.eventId, amount]);
    },
    summary: `refund ${context.eventId}`,
  };
}
