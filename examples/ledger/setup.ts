/**
 * The ledger application's setup: its own tables, and the onceq store beside them with
 * the `general` event id policy (webhook ids such as `evt_17`, not the lesson's `E0001`).
 *
 *   bun examples/ledger/setup.ts <store>      (a SQLite file or a postgres:// URL)
 */
import { openStore } from '@onceq/core';
import { createTables } from './tables.ts';

export async function setUpLedger(target: string): Promise<void> {
  await createTables(target);
  const store = await openStore(target, { idPolicy: { kind: 'general' } });
  await store.close();
}

if (import.meta.main) {
  const target = process.argv[2];
  if (target === undefined) {
    console.error('usage: bun examples/ledger/setup.ts <store>');
    process.exit(2);
  }
  await setUpLedger(target);
  console.log(`ledger tables and onceq store ready at ${target}`);
}
