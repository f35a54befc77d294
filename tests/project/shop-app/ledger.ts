/**
 * The handler, one module for both backends: a ledger row per payment through `insert`,
 * the account's balance upserted through `write`. `context.store.kind` picks the
 * placeholders.
 */
import {
  type Completion,
  type HandlerContext,
  type JsonObject,
  PermanentFailure,
} from '@onceq/core';

export function ledgerHandler(currencies: readonly string[]) {
  return (payload: JsonObject, context: HandlerContext): Completion => {
    const { account, amount_cents: amount, currency } = payload;
    if (typeof account !== 'string' || typeof amount !== 'number' || typeof currency !== 'string') {
      throw new PermanentFailure('invalid_payload', 'needs account, amount_cents and currency');
    }
    if (!currencies.includes(currency)) {
      throw new PermanentFailure('unknown_currency', `${currency} is not settled yet`);
    }
    const $ = (n: number) => (context.store.kind === 'sqlite' ? '?' : `$${n}`);
    return {
      insert: { ledger: { event_id: context.eventId, account, amount_cents: amount, currency } },
      async write(tx) {
        await tx.query(
          `INSERT INTO balances (account, amount_cents, entries) VALUES (${$(1)}, ${$(2)}, 1)
           ON CONFLICT (account) DO UPDATE
           SET amount_cents = balances.amount_cents + excluded.amount_cents, entries = balances.entries + 1`,
          [account, amount],
        );
      },
      summary: `${amount} ${currency} to ${account}`,
    };
  };
}
