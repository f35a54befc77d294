import { Database } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apply, claim, dlq, enqueue, openStore, status } from '@onceq/core';
import { countMessages, listMessages, waitingReport } from '@onceq/core/admin';
import { modelClock, nextDue } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';

/**
 * The hot statements must stay O(log n) as the queue grows: a claim reads the head of
 * an index in claim order (no scan, no sort), recovery reads a range of expired leases,
 * apply goes by primary key. We capture the SQL the store really runs and ask SQLite
 * for its plan.
 */
const dir = mkdtempSync(join(tmpdir(), 'onceq-plans-'));
const path = join(dir, 'plans.db');
const captured: { sql: string; parameters: readonly unknown[] }[] = [];

function plan(sql: string, parameters: readonly unknown[]): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .query(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...(parameters as never[]))
      .map((row) => (row as { detail: string }).detail);
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
  for (let chunk = 0; chunk < 5; chunk++) {
    const lines = Array.from({ length: 1000 }, (_, i) => {
      const n = chunk * 1000 + i;
      return `{"event_id":"E${String(n).padStart(4, '0')}","payload":{"category":"book","amount_cents":${n + 1}}}`;
    });
    await enqueue(store, lines.join('\n'));
  }
  const lease = await claim(store);
  if (lease === null) throw new Error('nothing claimed');
  await apply(store, lease, handlers.v1);
  await status(store);
  await dlq(store);
  await nextDue(store);
  await waitingReport(store, 1000);
  await countMessages(store, { state: 'waiting' });
  await listMessages(store, { state: 'waiting', order: 'newest' });
  await store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('query plans on a store of 5,000 messages', () => {
  test("claim picks the head of its queue's messages_ready_queue in order, without a scan or a sort", () => {
    const pick = statement(/^UPDATE messages SET\s+state = 'leased', attempts/);
    const detail = plan(pick.sql, pick.parameters).join('\n');
    expect(detail).toContain(
      'USING COVERING INDEX messages_ready_queue (queue=? AND available_at<?)',
    );
    expect(detail).not.toMatch(/TEMP B-TREE|SCAN messages/);
  });

  test('lazy recovery searches the expired range of messages_lease', () => {
    const recover = statement(/^\s*UPDATE messages INDEXED BY messages_lease/);
    const detail = plan(recover.sql, recover.parameters).join('\n');
    expect(detail).toMatch(/USING (COVERING )?INDEX messages_lease \(lease_until<\?\)/);
    expect(detail).not.toContain('SCAN messages');
  });

  test('apply reads and ACKs by primary key', () => {
    const read = statement(/^SELECT event_id, payload, state/);
    const ack = statement(/^UPDATE messages SET state = 'done'/);
    for (const s of [read, ack]) {
      const detail = plan(s.sql, s.parameters).join('\n');
      expect(detail).toMatch(
        /SEARCH messages USING (INDEX|PRIMARY KEY|COVERING INDEX) sqlite_autoindex_messages_1/,
      );
    }
  });

  test('status reads one snapshot: counts from the maintained counters, ages from index ranges, never a scan of messages or effects', () => {
    const snapshot = statement(/^\s*WITH RECURSIVE ready_queues[\s\S]*SELECT 'state' AS kind/);
    const lines = plan(snapshot.sql, snapshot.parameters).join('\n');
    expect(lines).toContain('SEARCH onceq_counts USING PRIMARY KEY (kind=?)');
    // The queues with a ready message, one seek each, then each queue's range.
    expect(lines).toMatch(/SEARCH m USING COVERING INDEX messages_ready_queue \(queue>\?\)/);
    expect(lines).toMatch(
      /SEARCH m USING COVERING INDEX messages_ready_queue \(queue=\? AND available_at<\?\)/,
    );
    expect(lines).toMatch(/(SEARCH|SCAN) messages USING (COVERING )?INDEX messages_dead/);
    expect(lines).not.toMatch(/SCAN (messages|m|effects)\b/);
  });

  test('the next due time reads the head of each queue, never a scan of the ready messages', () => {
    for (const pattern of [/AS ready_at/, /AS in_backoff/]) {
      const due = statement(pattern);
      const lines = plan(due.sql, due.parameters).join('\n');
      expect(lines).toMatch(/SEARCH m USING COVERING INDEX messages_ready_queue \(queue=\?/);
      // Only the leases held are counted whole (`leased`), from their own index.
      const scans = lines.split('\n').filter((line) => /SCAN (messages|m)\b/.test(line));
      expect(
        scans.filter((line) => line !== 'SCAN messages USING COVERING INDEX messages_lease'),
      ).toEqual([]);
    }
  });

  test('the waiting messages are counted and listed through the keys index, never a scan of messages', () => {
    for (const prefix of [
      /^SELECT count\(\*\).*messages\.state = 'waiting'/s,
      /ORDER BY messages\.updated_at DESC/,
    ]) {
      const { sql, parameters } = statement(prefix);
      expect(sql).toContain("messages.state = 'waiting'");
      const lines = plan(sql, parameters).join('\n');
      expect(lines).toMatch(/SCAN messages USING (COVERING )?INDEX messages_key/);
      expect(lines).not.toMatch(/SCAN messages$/m);
    }
  });

  test('the dead-letter listing searches by state', () => {
    const dead = statement(/WHERE messages\.state = 'dead'/);
    expect(plan(dead.sql, dead.parameters).join('\n')).toMatch(
      /SEARCH messages USING (COVERING )?INDEX messages_(state|dead) \(state=\?\)/,
    );
  });
});
