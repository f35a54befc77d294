// The PostgreSQL test factory hands a schema a test left as the migrations built it to
// the next test, emptied back to a new store's rows, and drops any other: a reused
// schema is indistinguishable from a new one, and a changed one is never reused.
import { expect, test } from 'bun:test';
import { enqueue, getIdPolicy, type IdPolicy, status } from '@onceq/core';
import { doctor } from '@onceq/core/admin';
import { SQL } from 'bun';
import { sql } from 'kysely';
import { onPostgres } from '../support/backends.ts';
import { batch, line, paid, postgresFactory, T0, testClock } from '../support/factories.ts';
import { spareCount } from '../support/pg-schemas.ts';
import { rawDb } from '../support/raw-db.ts';

async function schemaExists(schema: string): Promise<boolean> {
  const admin = new SQL(process.env.DATABASE_URL as string);
  try {
    const rows = await admin.unsafe('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    return rows.length > 0;
  } finally {
    await admin.close();
  }
}

/**
 * Opens a store in a new schema, never a spare: a spare had a test's rows deleted, so the
 * server may vacuum it while it waits, and a vacuumed schema is rightly dropped.
 */
async function openNewSchema(idPolicy?: IdPolicy) {
  const spares = await Promise.all(
    Array.from({ length: spareCount(process.env.DATABASE_URL as string) }, () =>
      postgresFactory.open(testClock(T0)),
    ),
  );
  const opened = await postgresFactory.open(testClock(T0), idPolicy);
  for (const spare of spares) await spare.cleanup();
  return opened;
}

/** Opens stores until one lands in `schema` (the spare last given back), or fails. */
async function reopenedIn(schema: string) {
  const opened = await postgresFactory.open(testClock(T0));
  if (opened.schema !== schema) {
    await opened.cleanup();
    throw new Error(`the next store got ${opened.schema}, not the schema given back (${schema})`);
  }
  return opened;
}

onPostgres('test schemas given back', () => {
  test('a schema used only through its rows is reused: the next store in it is as new', async () => {
    const first = await openNewSchema({ kind: 'general' });
    const schema = first.schema as string;
    await enqueue(
      first.store,
      batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 5))),
    );
    await first.cleanup();
    expect(await schemaExists(schema)).toBe(true);

    const second = await reopenedIn(schema);
    try {
      const report = await status(second.store);
      expect(report.messages).toEqual({ ready: 0, leased: 0, done: 0, dead: 0 });
      expect([report.effects, report.total]).toEqual([0, 0]);
      expect(await getIdPolicy(second.store)).toEqual({ kind: 'lesson' });
      expect((await doctor(second.store)).findings).toEqual([]);
      // Its counters count again from zero.
      await enqueue(second.store, batch(line('E0001', paid('book', 100))));
      expect((await status(second.store)).messages.ready).toBe(1);
    } finally {
      await second.cleanup();
    }
  });

  test('a schema whose shape a test changed is dropped, never reused', async () => {
    const opened = await postgresFactory.open(testClock(T0));
    const schema = opened.schema as string;
    await opened.forgeState('E9999', 'done'); // drops the messages CHECK in this schema
    await opened.cleanup();
    expect(await schemaExists(schema)).toBe(false);

    // Control: the same steps without the DDL keep the schema.
    const kept = await openNewSchema();
    await rawDb(kept.store, async (db) => {
      await sql`SELECT count(*) FROM messages`.execute(db);
    });
    await kept.cleanup();
    expect(await schemaExists(kept.schema as string)).toBe(true);
  });

  test('an index or a table of the test, an analyzed table or changed storage options drop the schema, whether it was given back before or new', async () => {
    const seen = new Set<string>();
    const open = async () => {
      const opened = await postgresFactory.open(testClock(T0));
      seen.add(opened.schema as string);
      return opened;
    };
    for (const ddl of [
      'CREATE INDEX extra_index ON messages (attempts)',
      'CREATE TABLE orders (id text PRIMARY KEY)',
      'ANALYZE messages',
      'ALTER TABLE messages SET (fillfactor = 90)',
      'GRANT SELECT ON messages TO PUBLIC',
    ]) {
      // A schema given back before (checked by its catalog rows) ...
      const clean = await open();
      await clean.cleanup();
      const given = await open();
      expect(given.schema).toBe(clean.schema as string);
      // ... and a new one (checked against the reference in full).
      const held = [given];
      let fresh = await open();
      while (held.some((o) => o.schema === fresh.schema) || fresh.schema === clean.schema) {
        held.push(fresh);
        fresh = await open();
      }
      for (const opened of [given, fresh]) {
        await rawDb(opened.store, async (db) => {
          await sql.raw(ddl).execute(db);
        });
      }
      for (const opened of held.slice(1)) await opened.cleanup();
      for (const opened of [given, fresh]) {
        await opened.cleanup();
        expect([ddl, await schemaExists(opened.schema as string)]).toEqual([ddl, false]);
      }
    }
    expect(seen.size).toBeGreaterThan(5);
  });
});
