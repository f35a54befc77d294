/**
 * A webhook-like source of payment and refund events, deterministic so the expected
 * balances are known: each event has its own id (`evt_…`), and some are delivered again,
 * as webhook senders do when they did not see an acknowledgement in time: a second time
 * in the same batch, or in a later one.
 *
 *   bun examples/ledger/source.ts [events] > deliveries.jsonl
 */
import type { Currency } from './tables.ts';
import { CURRENCIES } from './tables.ts';

export interface LedgerEvent {
  eventId: string;
  payload: {
    type: 'payment' | 'refund';
    account: string;
    currency: Currency;
    amount_minor: bigint;
    refund_of?: string;
  };
}

/** The number of events a run uses unless told otherwise. */
export const DEFAULT_EVENTS = 60;

/** Larger than 2^53: an amount that a JavaScript number cannot hold exactly. */
const HUGE = 90_071_992_547_409_931n;

/**
 * Events 1..count: payments of varied sizes (zero and {@link HUGE} among them) in three
 * currencies over three accounts, and every fourth event a refund of the payment before it.
 */
export function ledgerEvents(count = DEFAULT_EVENTS): LedgerEvent[] {
  const events: LedgerEvent[] = [];
  for (let n = 1; n <= count; n++) {
    const account = `acct_${(n % 3) + 1}`;
    const currency = CURRENCIES[Math.floor(n / 3) % CURRENCIES.length] as Currency;
    const previous = events.at(-1);
    if (n % 4 === 0 && previous !== undefined && previous.payload.type === 'payment') {
      events.push({
        eventId: `evt_${n}`,
        payload: { ...previous.payload, type: 'refund', refund_of: previous.eventId },
      });
      continue;
    }
    const amount = n === 5 ? 0n : n === 7 ? HUGE : BigInt(n * 1_299 + (n % 5) * 10_000_000);
    events.push({
      eventId: `evt_${n}`,
      payload: { type: 'payment', account, currency, amount_minor: amount },
    });
  }
  return events;
}

/** One JSONL line, keeping a bigint amount exact (JSON.stringify cannot write one). */
export function jsonl(event: LedgerEvent): string {
  const { amount_minor, ...rest } = event.payload;
  const payload = JSON.stringify(rest).replace(/}$/, `,"amount_minor":${amount_minor}}`);
  return `{"event_id":${JSON.stringify(event.eventId)},"payload":${payload}}`;
}

/**
 * The deliveries as batches of about `perBatch` lines: every event once, every third one
 * again in the same batch, every fifth one again in the next batch.
 */
export function deliveries(count = DEFAULT_EVENTS, perBatch = 25): string[] {
  const events = ledgerEvents(count);
  const batches: string[][] = [];
  for (let first = 0; first < events.length; first += perBatch) {
    const batch: string[] = [];
    for (const [i, event] of events.slice(first, first + perBatch).entries()) {
      batch.push(jsonl(event));
      if ((first + i) % 3 === 0) batch.push(jsonl(event));
    }
    const previous = events.slice(Math.max(0, first - perBatch), first);
    for (const [i, event] of previous.entries()) if (i % 5 === 0) batch.push(jsonl(event));
    batches.push(batch);
  }
  return batches.map((lines) => `${lines.join('\n')}\n`);
}

/** `account currency` → the exact balance once every event counted once. */
export function expectedBalances(count = DEFAULT_EVENTS): Map<string, bigint> {
  const balances = new Map<string, bigint>();
  for (const { payload } of ledgerEvents(count)) {
    const key = `${payload.account} ${payload.currency}`;
    const signed = payload.type === 'refund' ? -payload.amount_minor : payload.amount_minor;
    balances.set(key, (balances.get(key) ?? 0n) + signed);
  }
  return balances;
}

if (import.meta.main) {
  const count = Number(process.argv[2] ?? DEFAULT_EVENTS);
  process.stdout.write(deliveries(count).join(''));
}
