/**
 * Exits 0 only when the ledger is exact: every event of the source is `done` in onceq
 * and has exactly one entry with its amount, and every balance equals the sum the source
 * adds up to (and the sum of its entries). Otherwise it names each difference, exit 1.
 *
 *   bun examples/ledger/check.ts <store> [events]
 */
import { DEFAULT_EVENTS, expectedBalances, ledgerEvents } from './source.ts';
import { readLedger } from './tables.ts';

/** The differences between the ledger at `target` and what `count` events add up to. */
export async function ledgerDifferences(target: string, count = DEFAULT_EVENTS): Promise<string[]> {
  const ledger = await readLedger(target);
  const problems: string[] = [];
  const events = ledgerEvents(count);
  const states = Object.entries(ledger.states).filter(([state, n]) => state !== 'done' && n > 0);
  if ((ledger.states.done ?? 0) !== count || states.length > 0) {
    problems.push(
      `messages: ${JSON.stringify(ledger.states)}, expected ${count} done and nothing else`,
    );
  }
  if (ledger.rows !== count) problems.push(`entries: ${ledger.rows} rows, expected ${count}`);
  for (const { eventId, payload } of events) {
    const signed = payload.type === 'refund' ? -payload.amount_minor : payload.amount_minor;
    const entry = ledger.entries.get(eventId);
    if (entry !== signed)
      problems.push(`entry ${eventId}: ${entry ?? 'missing'}, expected ${signed}`);
  }
  const fromEntries = new Map<string, bigint>();
  for (const { eventId, payload } of events) {
    const key = `${payload.account} ${payload.currency}`;
    fromEntries.set(key, (fromEntries.get(key) ?? 0n) + (ledger.entries.get(eventId) ?? 0n));
  }
  const expected = expectedBalances(count);
  for (const key of new Set([...expected.keys(), ...ledger.balances.keys()])) {
    const have = ledger.balances.get(key);
    if (have !== expected.get(key)) {
      problems.push(`balance ${key}: ${have ?? 'missing'}, expected ${expected.get(key)}`);
    } else if (have !== fromEntries.get(key)) {
      problems.push(`balance ${key}: ${have}, but its entries add up to ${fromEntries.get(key)}`);
    }
  }
  return problems;
}

if (import.meta.main) {
  const target = process.argv[2];
  if (target === undefined) {
    console.error('usage: bun examples/ledger/check.ts <store> [events]');
    process.exit(2);
  }
  const count = Number(process.argv[3] ?? DEFAULT_EVENTS);
  const problems = await ledgerDifferences(target, count);
  if (problems.length > 0) {
    for (const p of problems) console.error(`ledger check: ${p}`);
    process.exit(1);
  }
  console.log(`ledger exact: ${count} events, each once; ${expectedBalances(count).size} balances`);
}
