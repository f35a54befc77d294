/**
 * An ordered enqueue into a store that grows faster than its statistics stays a lookup
 * per event, not a scan of every message per batch. PostgreSQL keeps a named statement's
 * generic plan once it chose one, and a plan chosen while the table was small (a scan,
 * a hash of the whole table) stays while the table grows, until autovacuum analyzes it:
 * an ordered enqueue of 1000-line batches into a new store went from 40 ms to 900 ms a
 * batch that way. So the key tails are read by statements with one plan at every size,
 * and the lookup of the batch's ids, whose best plan does depend on the size, is planned
 * at each run (never prepared).
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { enqueue, openStore, type Store, transaction } from '@onceq/core';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';

const KEYS = 200;

/** `count` events from `from` on, event i of key i mod {@link KEYS}, as one JSONL batch. */
function keyedBatch(from: number, count: number): string {
  const lines: string[] = [];
  for (let i = from; i < from + count; i++) {
    lines.push(
      `{"event_id":"E${i}","payload":{"category":"book","amount_cents":${1 + (i % 997)},"key":"k-${i % KEYS}"}}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** The node types that read `messages` in `node`'s tree. */
function messageReads(node: PlanNode): string[] {
  const here = node['Relation Name'] === 'messages' ? [node['Node Type']] : [];
  return [...here, ...(node.Plans ?? []).flatMap(messageReads)];
}

describePostgres('an ordered enqueue into a growing store', (url) => {
  const schema = `t_enqplan_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new SQL(url, { max: 1 });
  const seen = new Map<string, readonly unknown[]>();
  let store: Store;

  beforeAll(async () => {
    // One connection: the statements this test asks about ran on the one it reads.
    const oneConnection = `${url}${url.includes('?') ? '&' : '?'}pool_max=1`;
    store = await openStore(oneConnection, {
      schema,
      idPolicy: { kind: 'general' },
      onQuery: (text, parameters) => seen.set(text, parameters),
    });
    await admin.unsafe(`ALTER TABLE ${schema}.messages SET (autovacuum_enabled = false)`);
    // Small batches first, while the table is small (a named statement gets its generic
    // plan at its sixth run), then the table grows well past them, never analyzed.
    for (let i = 0; i < 8; i++) await enqueue(store, keyedBatch(i * 10, 10), { keyField: 'key' });
    for (let from = 1000; from < 21_000; from += 1000) {
      await enqueue(store, keyedBatch(from, 1000), { keyField: 'key' });
    }
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.close();
  });

  /** The text of the statement matching `name` the store ran, and its last parameters. */
  function ran(name: RegExp): [string, readonly unknown[]] {
    const found = [...seen].find(([text]) => name.test(text));
    if (found === undefined) throw new Error(`no statement matching ${name} ran`);
    return found;
  }

  test('the key tails: even a generic plan, on a table never analyzed, reads messages by index only', async () => {
    const [text, parameters] = ran(/WITH k\(name\) AS \(VALUES/);
    const reads = await admin.begin(async (tx) => {
      await tx.unsafe('SET LOCAL plan_cache_mode = force_generic_plan');
      await tx.unsafe(`PREPARE tails AS ${text}`);
      const values = parameters.map((p) => `'${String(p).replaceAll("'", "''")}'`).join(', ');
      const rows = await tx.unsafe(`EXPLAIN (FORMAT JSON) EXECUTE tails(${values})`);
      await tx.unsafe('DEALLOCATE tails');
      const plan = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'][0]?.Plan;
      if (plan === undefined) throw new Error('no plan');
      return messageReads(plan);
    });
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(read).toMatch(/^Index (Only )?Scan$/);
  });

  test('the lookup of a batch ids is planned at each run: never a prepared statement', async () => {
    const prepared = await transaction(store, async (tx) => {
      const { rows } = await tx.query('SELECT name FROM pg_prepared_statements');
      return rows.map((row) => String(row.name));
    });
    // Named statements are in use on this connection (the batch's insert among them)…
    expect(prepared.some((name) => name.startsWith('onceq/enqueue-insert-array/'))).toBe(true);
    expect(prepared.some((name) => name.startsWith('onceq/key-tails/'))).toBe(true);
    // … and the lookup ran on it, unnamed.
    ran(/^SELECT event_id, payload, payload_sha256/);
    expect(prepared.filter((name) => name.startsWith('onceq/enqueue-lookup/'))).toEqual([]);
  });

  test('every event was stored once, in its key at its place', async () => {
    const rows = await admin.unsafe(
      `SELECT count(*)::int AS n, count(DISTINCT (ordering_key, seq))::int AS places
       FROM ${schema}.messages`,
    );
    expect(rows[0]).toEqual({ n: 20_080, places: 20_080 });
  });
});
