/**
 * The 1,000,000-message store on PostgreSQL: claim and `status` with UUID ids (a
 * `general` store), built by one bulk `INSERT … SELECT` from `generate_series` with
 * `gen_random_uuid()` (no CHECK bypassed, the counter triggers fire as for any write),
 * then `ANALYZE` (what `onceq doctor --fix` does after a large load). States as in the
 * SQLite figure: 80 % done with effects, 10 % ready, 5 % leased, 5 % dead. A throwaway
 * schema, dropped afterwards.
 */
import { claim, openStore, status } from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { sql } from 'kysely';
import { dropSchema, withPostgres } from '../raw-db.ts';
import { type Spread, spread } from '../util.ts';

export interface LargeResult {
  messages: number;
  buildMs: number;
  claimMs: Spread;
  statusMs: Spread;
}

export async function runPgLarge(
  url: string,
  messages: number,
  repeats: number,
): Promise<LargeResult> {
  const schema = `onceq_bench_streams_${process.pid}`;
  const store = await openStore(url, { schema, idPolicy: GENERAL_POLICY });
  try {
    const now = Math.floor(Date.now() / 1000);
    const finished = now - 86_400;
    const t0 = performance.now();
    await withPostgres(url, schema, async (db) => {
      await sql`
        INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
          lease_until, last_error_code, enqueued_at, updated_at)
        SELECT gen_random_uuid()::text,
          format('{"amount_cents":%s,"category":"%s","note":"bench %s"}',
            1 + (i::bigint * 7919) % 99999, (ARRAY['book', 'pen', 'bag'])[i % 3 + 1], i),
          s.state,
          CASE WHEN s.state = 'ready' THEN 0 ELSE 1 END,
          CASE WHEN s.state = 'ready' THEN 0 ELSE 1 END,
          ${finished}::bigint,
          CASE WHEN s.state = 'leased' THEN ${now + 3600}::bigint END,
          CASE WHEN s.state = 'dead' THEN 'invalid_payload' END,
          ${finished}::bigint,
          CASE WHEN s.state IN ('done', 'dead') THEN ${finished}::bigint ELSE ${now}::bigint END
        FROM generate_series(0, ${messages}::int - 1) i,
          LATERAL (SELECT CASE WHEN i % 20 < 16 THEN 'done' WHEN i % 20 < 18 THEN 'ready'
                               WHEN i % 20 < 19 THEN 'leased' ELSE 'dead' END AS state) s`.execute(
        db,
      );
      await sql`
        INSERT INTO effects (event_id, category, amount_cents, created_at)
        SELECT event_id, (payload::jsonb)->>'category', ((payload::jsonb)->>'amount_cents')::int, ${finished}::bigint
        FROM messages WHERE state = 'done'`.execute(db);
      await sql`ANALYZE messages`.execute(db);
      await sql`ANALYZE effects`.execute(db);
    });
    const buildMs = performance.now() - t0;
    const claimMs: number[] = [];
    const statusMs: number[] = [];
    await status(store); // warm, as a running system would be
    for (let r = 0; r < 50; r++) {
      const c0 = performance.now();
      const lease = await claim(store);
      claimMs.push(performance.now() - c0);
      if (lease === null) throw new Error('bench: nothing to claim in the large PostgreSQL store');
    }
    for (let r = 0; r < Math.max(5, repeats * 3); r++) {
      const s0 = performance.now();
      await status(store);
      statusMs.push(performance.now() - s0);
    }
    return { messages, buildMs, claimMs: spread(claimMs), statusMs: spread(statusMs) };
  } finally {
    await store.close();
    await dropSchema(url, schema).catch(() => {});
  }
}
