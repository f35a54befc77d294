import { sql } from 'kysely';
import type { Store } from '../backend/backend.ts';
import { MESSAGE_STATES, type MessageState } from '../states.ts';
import { stateLiteral } from '../transitions.ts';
import type { StatusReport } from '../types.ts';

/** {@link StatusReport} plus the ages an operator (and `/metrics`) watches. */
export interface QueueSnapshot {
  report: StatusReport;
  /** Earliest `available_at` of a message claimable at `now` (ready, not in backoff), or null. */
  oldestReadyAt: number | null;
  /** Earliest `updated_at` (the time it died) of a dead message, or null. */
  oldestDeadAt: number | null;
  /** The clock reading the ages are relative to. */
  now: number;
}

/**
 * Counts by state, effects and money by category, and the oldest ready and dead times,
 * read by **one statement**: one snapshot on both backends, so `done` and `effects`
 * can never disagree because an ACK committed between two reads. Each part is an index
 * range (`messages_claim` covers the counts by state and the ready head; `effects_category`
 * the money), so it stays cheap on 100,000 messages. Stored values only: an expired lease
 * counts as leased until the next claim recovers it.
 */
export async function queueSnapshot(store: Store): Promise<QueueSnapshot> {
  const now = store.clock();
  const { rows } = await sql<{ kind: string; k: string | null; n: unknown; v: unknown }>`
    SELECT 'state' AS kind, state AS k, count(*) AS n, NULL AS v FROM messages GROUP BY state
    UNION ALL
    SELECT 'effect', category, count(*), sum(amount_cents) FROM effects GROUP BY category
    UNION ALL
    SELECT 'ready', NULL, 0, min(available_at) FROM messages
      WHERE state = ${stateLiteral('ready')} AND available_at <= ${now}
    UNION ALL
    SELECT 'dead', NULL, 0, min(updated_at) FROM messages WHERE state = ${stateLiteral('dead')}`.execute(
    store.db,
  );
  const messages = Object.fromEntries(MESSAGE_STATES.map((s) => [s, 0])) as Record<
    MessageState,
    number
  >;
  const totals: Record<string, number> = {};
  let effects = 0;
  let total = 0;
  let oldestReadyAt: number | null = null;
  let oldestDeadAt: number | null = null;
  const categories = rows.filter((r) => r.kind === 'effect').sort((a, b) => cmp(a.k, b.k));
  for (const row of rows) {
    if (row.kind === 'state') messages[row.k as MessageState] = Number(row.n);
    else if (row.kind === 'ready' && row.v !== null) oldestReadyAt = Number(row.v);
    else if (row.kind === 'dead' && row.v !== null) oldestDeadAt = Number(row.v);
  }
  for (const row of categories) {
    totals[row.k as string] = Number(row.v);
    effects += Number(row.n);
    total += Number(row.v);
  }
  return { report: { messages, effects, totals, total }, oldestReadyAt, oldestDeadAt, now };
}

function cmp(a: string | null, b: string | null): number {
  return (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;
}
