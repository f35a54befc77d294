// Upgrading a SQLite store made by an earlier release: pending migrations apply on open,
// data intact, and the protocol works on the new schema.
import { Database } from 'bun:sqlite';
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claim, claimMany, enqueue, openStore, show } from '../packages/core/src/index.ts';
import { batch, line, paid, testClock } from './support/factories.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceq-migrations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const leaseIndexSql = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name = 'messages_lease'")
      .get()?.sql;
  } finally {
    db.close();
  }
};

test('a store of 0001 gets the partial messages_lease of 0002 on open, its leases still recovered', async () => {
  const path = join(dir, 'old.db');
  const clock = testClock();
  // Build the store, then put it back the way 0001 left it: the full index, and no
  // record of 0002.
  const store = await openStore(path, { clock });
  await enqueue(store, batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 200))));
  const lease = await claim(store, { leaseSeconds: 2 });
  expect(lease?.eventId).toBe('E0001');
  await store.close();
  const raw = new Database(path);
  raw.run('DROP INDEX messages_lease');
  raw.run('CREATE INDEX messages_lease ON messages (state, lease_until)');
  raw.run("DELETE FROM onceq_migrations WHERE name = '0002_lease_index_partial'");
  raw.close();
  expect(leaseIndexSql(path)).toBe('CREATE INDEX messages_lease ON messages (state, lease_until)');

  clock.set(1005);
  const upgraded = await openStore(path, { clock });
  try {
    expect(leaseIndexSql(path)).toBe(
      "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
    );
    // The expired lease of E0001 (until 1002) is found through the new index: E0002
    // (available at 1000) is claimed first, then E0001 again, at generation 2.
    const leases = await claimMany(upgraded, { limit: 2 });
    expect(leases.map((l) => [l.eventId, l.generation])).toEqual([
      ['E0002', 1],
      ['E0001', 2],
    ]);
    expect((await show(upgraded, 'E0001')).lastErrorCode).toBe('lease_expired');
  } finally {
    await upgraded.close();
  }
});
