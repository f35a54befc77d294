/**
 * The ledger application through the library: set up, receive the webhook deliveries
 * (repeats included) with `enqueue`, process them with the handler module's `handle`
 * (`work` drains the queue), then check the balances.
 *
 *   bun examples/ledger/app.ts <store> [events]     (exit 0 only when the ledger is exact)
 */
import { enqueue, openStore, work } from '@onceq/core';
import { ledgerDifferences } from './check.ts';
import { handle } from './handler.ts';
import { setUpLedger } from './setup.ts';
import { DEFAULT_EVENTS, deliveries } from './source.ts';

const target = process.argv[2] ?? './ledger.db';
const count = Number(process.argv[3] ?? DEFAULT_EVENTS);
await setUpLedger(target);
const store = await openStore(target);
let duplicates = 0;
for (const batch of deliveries(count)) duplicates += (await enqueue(store, batch)).duplicates;
const summary = await work(store, handle);
await store.close();
const problems = await ledgerDifferences(target, count);
for (const p of problems) console.error(`ledger check: ${p}`);
console.log(
  JSON.stringify({
    done: summary.done,
    dead: summary.dead,
    duplicates,
    exact: problems.length === 0,
  }),
);
process.exit(problems.length === 0 ? 0 : 1);
