/**
 * The ledger's handler module: one payment or refund per event, written to the
 * application's own tables in the transaction that ACKs the message.
 *
 *   onceq worker --handler ./examples/ledger/handler.ts --db ledger.db
 *
 * Outside any transaction `handle` checks the payload (a bad one is a permanent failure
 * with its own code: straight to the DLQ, nothing written) and returns a completion.
 * onceq then runs its `write(tx)` inside the ACK's transaction, after the fence check:
 * the entry and the balance change commit if and only if the message is ACKed, so a
 * webhook that delivers an event twice, or a worker killed mid-way, never counts it twice.
 *
 * The module imports only `@onceq/core`, which the `onceq` binary serves itself: it runs
 * from any directory with nothing installed beside it.
 */
import { type JsonObject, PermanentFailure } from '@onceq/core';
import { BALANCES, CURRENCIES, type Currency, ENTRIES } from './tables.ts';

export const version = 'ledger-1';

/** What one event asks of the ledger: `amountMinor` is signed (a refund is negative). */
export interface Posting {
  account: string;
  currency: Currency;
  amountMinor: bigint;
}

/**
 * Reads a `payment` or `refund` event: `account` (a non-empty string), `currency` (one of
 * {@link CURRENCIES}) and `amount_minor` (an integer ≥ 0 in the currency's minor unit; any
 * size, zero included). Throws a {@link PermanentFailure} naming what is wrong.
 */
export function posting(payload: JsonObject): Posting {
  const { type, account, currency, amount_minor: amount } = payload;
  if (type !== 'payment' && type !== 'refund') {
    throw new PermanentFailure(
      'unknown_type',
      `type must be payment or refund, got ${String(type)}`,
    );
  }
  if (typeof account !== 'string' || account === '') {
    throw new PermanentFailure('invalid_account', 'account must be a non-empty string');
  }
  if (typeof currency !== 'string' || !(CURRENCIES as readonly string[]).includes(currency)) {
    throw new PermanentFailure(
      'unknown_currency',
      `currency must be one of ${CURRENCIES.join(', ')}, got ${String(currency)}`,
    );
  }
  // onceq's parser keeps integers exact: a number up to 2^53, a bigint beyond.
  const minor =
    typeof amount === 'bigint'
      ? amount
      : Number.isSafeInteger(amount)
        ? BigInt(amount as number)
        : null;
  if (minor === null || minor < 0n) {
    throw new PermanentFailure('invalid_amount', 'amount_minor must be an integer ≥ 0');
  }
  return {
    account,
    currency: currency as Currency,
    amountMinor: type === 'refund' ? -minor : minor,
  };
}

/** The part of the ACK's transaction this handler uses (see docs/handlers.md). */
export interface LedgerTx {
  query(sql: string, params?: readonly unknown[]): Promise<unknown>;
}

/** The part of the handler's context this handler uses: the event and the store's backend. */
export interface LedgerContext {
  readonly eventId: string;
  readonly store: { readonly kind: 'sqlite' | 'postgres' };
}

export function handle(payload: JsonObject, context: LedgerContext) {
  const p = posting(payload);
  const pg = context.store.kind === 'postgres';
  const $ = (n: number) => (pg ? `$${n}` : '?');
  // The amount is bound as text and cast in SQL: exact at any size, on both backends.
  const int = (n: number) => `CAST(${$(n)} AS ${pg ? 'BIGINT' : 'INTEGER'})`;
  const amount = p.amountMinor.toString();
  return {
    summary: `${p.account} ${p.amountMinor} ${p.currency}`,
    async write(tx: LedgerTx) {
      await tx.query(
        `INSERT INTO ${ENTRIES} (event_id, account, currency, amount_minor)
         VALUES (${$(1)}, ${$(2)}, ${$(3)}, ${int(4)})`,
        [context.eventId, p.account, p.currency, amount],
      );
      await tx.query(
        `INSERT INTO ${BALANCES} (account, currency, balance_minor)
         VALUES (${$(1)}, ${$(2)}, ${int(3)})
         ON CONFLICT (account, currency)
         DO UPDATE SET balance_minor = ${BALANCES}.balance_minor + excluded.balance_minor`,
        [p.account, p.currency, amount],
      );
    },
  };
}
