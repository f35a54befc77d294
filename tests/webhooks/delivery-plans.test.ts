import { Database } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, type Handler, openStore, work } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { deliveryCounts, sendDeliveries } from '@onceq/core/webhooks';
import { serveOnLoopback } from '../support/loopback-server.ts';

/**
 * The sender's statements must not grow with the outbox: a claim reads the due range of
 * `deliveries_due`, and whether a keyed delivery waits for its key is read by primary
 * key and by the key's `messages_key` range, never by scanning deliveries or messages
 * (a key's long history, or many deliveries waiting). The counts read the partial
 * indexes of the states they count. We capture the SQL the store really runs and ask
 * SQLite for its plan.
 */
const dir = mkdtempSync(join(tmpdir(), 'onceq-delivery-plans-'));
const path = join(dir, 'plans.db');
const captured: { sql: string; parameters: readonly unknown[] }[] = [];
const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

function plan(sql: string, parameters: readonly unknown[]): string {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .query(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...(parameters as never[]))
      .map((row) => (row as { detail: string }).detail)
      .join('\n');
  } finally {
    db.close();
  }
}

function statement(prefix: RegExp): { sql: string; parameters: readonly unknown[] } {
  const found = captured.find((c) => prefix.test(c.sql));
  if (found === undefined) throw new Error(`no captured statement matches ${prefix}`);
  return found;
}

beforeAll(async () => {
  const store = await openStore(path, {
    clock: modelClock(1000),
    onQuery: (sql, parameters) => captured.push({ sql, parameters }),
  });
  const events = (from: number) =>
    Array.from({ length: 200 }, (_, i) => ({
      eventId: `E${String(from + i).padStart(4, '0')}`,
      payload: { category: 'book', amount_cents: 1 },
    }));
  await enqueue(store, events(0), { key: 'customer-1' });
  await enqueue(store, events(1000));
  const handler: Handler = (_payload, context) => ({
    deliver: [
      { to: 'hooks', body: { event: context.eventId } },
      { to: 'hooks', body: 'second' },
    ],
  });
  for (let round = 0; round < 200; round++) await work(store, handler, { batch: 100 });
  // The key's first delivery fails once: the rest of the key waits, then is released.
  let first = true;
  const server = serveOnLoopback((request) => {
    const failing = first && request.headers.get('webhook-id') === 'E0000:1';
    if (failing) first = false;
    return new Response('', { status: failing ? 500 : 200 });
  });
  try {
    const endpoints = [
      {
        name: 'hooks',
        url: `http://127.0.0.1:${server.port}/`,
        secrets: [SECRET],
        schedule: [0, 0],
      },
    ];
    await sendDeliveries(store, { endpoints, untilIdle: true });
    await deliveryCounts(store);
  } finally {
    server.stop(true);
    await store.close();
  }
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NO_SCAN = /SCAN (dl|dk|dx|mk|m|deliveries|messages)\b|TEMP B-TREE/;

describe('delivery statement plans', () => {
  test('a claim reads the due range; its key check goes by primary key and the key range', () => {
    const candidates = statement(/^SELECT dl\.event_id, dl\.key, CASE WHEN/);
    const detail = plan(candidates.sql, candidates.parameters);
    expect(detail).toContain(
      'SEARCH dl USING INDEX deliveries_due (endpoint=? AND available_at<?)',
    );
    expect(detail).toContain(
      'SEARCH mk USING INDEX messages_key (queue=? AND ordering_key=? AND seq<?)',
    );
    expect(detail).not.toMatch(NO_SCAN);
  });

  test('setting aside, leasing and releasing go by primary key and the key range', () => {
    for (const prefix of [
      /^UPDATE deliveries AS dl SET available_at/,
      /^UPDATE deliveries\s+SET state = 'leased'/,
      /^UPDATE deliveries\s+SET available_at = CASE/,
    ]) {
      const s = statement(prefix);
      const detail = plan(s.sql, s.parameters);
      expect(detail).toContain('USING INDEX sqlite_autoindex_deliveries_1 (event_id=?');
      expect(detail).not.toMatch(NO_SCAN);
    }
  });

  test('the counts of pending, leased and dead deliveries read their partial indexes', () => {
    const counts = statement(/^SELECT endpoint, 'pending' AS state/);
    const detail = plan(counts.sql, counts.parameters);
    for (const index of ['deliveries_due', 'deliveries_lease', 'deliveries_dead']) {
      expect(detail).toContain(`USING COVERING INDEX ${index}`);
    }
  });
});
