/**
 * The payment webhook endpoint: each POST writes its order row and enqueues the payment
 * in the same transaction. `bun server.ts` with ONCEQ_DB set; prints its URL.
 */
import { enqueue, openStore, transaction } from '@onceq/core';
import { createTables } from './tables.ts';

interface Payment {
  id: string;
  order_id: string;
  account: string;
  amount_cents: number;
  currency: string;
}

const store = await openStore(process.env.ONCEQ_DB ?? './shop.db', {
  idPolicy: { kind: 'general' },
});
await createTables(store);

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  development: false,
  error: () => new Response('internal error', { status: 500 }),
  async fetch(request) {
    if (request.method !== 'POST') return new Response('POST a payment', { status: 405 });
    const payment = (await request.json()) as Payment;
    const result = await transaction(store, async (tx) => {
      const $ = (n: number) => (tx.kind === 'sqlite' ? '?' : `$${n}`);
      await tx.query(
        `INSERT INTO orders (id, payment_id, account, amount_cents) VALUES (${$(1)}, ${$(2)}, ${$(3)}, ${$(4)})
         ON CONFLICT (id) DO NOTHING`,
        [payment.order_id, payment.id, payment.account, payment.amount_cents],
      );
      return enqueue(store, [{ eventId: payment.id, payload: { ...payment } }], {
        transaction: tx,
      });
    });
    return Response.json(result);
  },
});
console.log(server.url.href);
