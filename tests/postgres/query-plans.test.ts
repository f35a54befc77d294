/**
 * The hot PostgreSQL statements read only the rows they are about, even when the
 * planner's statistics were taken while no row was leased (a store analyzed after a bulk
 * load, or while idle): then it counts on one leased row, and any condition
 * `state = 'leased'` makes walking the leased rows of `messages_lease` look cheaper than a
 * primary-key lookup. With many workers holding many leases, a batch ACK
 * or a claim's lazy recovery that walks every live lease costs per statement what every
 * worker holds. Here 2,000 rows are leased under such statistics (autovacuum off on the
 * table, so they stay), the store's own claim and ACK run, and the server's plan of each
 * (`EXPLAIN ANALYZE`, in a transaction rolled back) says how many rows each scan of
 * `messages` read.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { enqueue, fail, type Lease, openStore, type Store, status, work } from '@onceq/core';
import { waitingReport } from '@onceq/core/admin';
import { claimMany, extendMany, nextDue, releaseMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';
import { nEvents } from '../support/factories.ts';

const LEASED = 2000;
const BATCH = 50;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

interface Scan {
  /** The node and the index it reads, e.g. `Index Scan on messages_pkey`. */
  scan: string;
  /** Rows it produced or filtered out, all loops. */
  read: number;
}

/**
 * Every scan of `messages` in `node`'s tree. A bitmap heap scan is named after the index
 * of its bitmap; rows an index scan skips inside the index (a condition on a later
 * column) are not counted, so ACKs are checked for their index too.
 */
function messageScans(node: PlanNode): Scan[] {
  const bitmapIndex = node.Plans?.find((p) => p['Node Type'] === 'Bitmap Index Scan');
  const index = node['Index Name'] ?? bitmapIndex?.['Index Name'];
  const here =
    node['Relation Name'] === 'messages' && node['Node Type'].endsWith('Scan')
      ? [
          {
            scan: `${node['Node Type']}${index === undefined ? '' : ` on ${index}`}`,
            read:
              ((node['Actual Rows'] ?? 0) +
                (node['Rows Removed by Filter'] ?? 0) +
                (node['Rows Removed by Index Recheck'] ?? 0)) *
              (node['Actual Loops'] ?? 1),
          },
        ]
      : [];
  return [...here, ...(node.Plans ?? []).flatMap(messageScans)];
}

describePostgres('hot statements under statistics that saw no lease', (url) => {
  const schema = `t_plans_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new SQL(url);
  const seen = new Map<string, readonly unknown[]>();
  let store: Store;

  /** The server's plan of the statement `name` last ran as, executed and rolled back. */
  async function scansOf(name: RegExp): Promise<Scan[]> {
    const found = [...seen].find(([text]) => name.test(text));
    if (found === undefined) throw new Error(`no statement matching ${name} ran`);
    const [text, parameters] = found;
    let plan: PlanNode | undefined;
    const rolledBack = new Error('rolled back');
    // Nothing of the statement stays: its writes go with the rollback.
    const ran = admin.begin(async (tx) => {
      // A row parameter is JSON text: sent as text, so the client does not quote it again.
      const sent = text.replaceAll('::json)', '::text::json)');
      const rows = await tx.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) ${sent}`, [...parameters]);
      plan = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'][0]?.Plan;
      throw rolledBack;
    });
    await expect(ran).rejects.toBe(rolledBack);
    if (plan === undefined) throw new Error(`no plan for ${name}`);
    return messageScans(plan);
  }

  /** Every scan of `messages` in `name`'s plan read at most `most` rows (and by `index`). */
  async function expectScans(name: RegExp, most: number, index?: string): Promise<void> {
    const scans = await scansOf(name);
    expect(scans.length).toBeGreaterThan(0);
    for (const { scan, read } of scans) {
      expect({ scan, read: read <= most }).toEqual({ scan, read: true });
      if (index !== undefined) expect(scan).toEndWith(` on ${index}`);
    }
  }

  beforeAll(async () => {
    store = await openStore(url, {
      schema,
      onQuery: (text, parameters) => seen.set(text, parameters),
    });
    await admin.unsafe(`ALTER TABLE ${schema}.messages SET (autovacuum_enabled = false)`);
    const lines = nEvents(3000).jsonl.trimEnd().split('\n');
    for (let at = 0; at < lines.length; at += 1000) {
      await enqueue(store, lines.slice(at, at + 1000).join('\n'));
    }
    await admin.unsafe(`ANALYZE ${schema}.messages`);
    const held: Lease[] = [];
    while (held.length < LEASED) {
      held.push(...(await claimMany(store, { limit: BATCH, leaseSeconds: 30 })));
    }
    // One batch of the usual drain (a claim, recovery included, and its fenced batch ACK),
    // then one message at a time (the record that also claims).
    expect((await work(store, handlers.v1, { batch: BATCH, max: BATCH })).done).toBe(BATCH);
    // At batch 1 the third message is claimed by the first one's record.
    expect((await work(store, handlers.v1, { batch: 1, max: 3 })).done).toBe(3);
    // The lease service's moves, each one row by its lease: a heartbeat, a release, a failure.
    const [beat, given, failed] = held;
    if (beat === undefined || given === undefined || failed === undefined) {
      throw new Error('claimed fewer leases than asked');
    }
    expect((await extendMany(store, [beat])).extended).toHaveLength(1);
    expect((await releaseMany(store, [given])).released).toEqual([given.eventId]);
    const failure = { kind: 'temporary', code: 'plan_check', detail: 'a failure' } as const;
    expect((await fail(store, failed, failure)).state).toBe('ready');
    // The reads of the ready messages of every queue: status, the wake-up, `work`'s report.
    await status(store);
    await nextDue(store);
    await waitingReport(store, Math.floor(Date.now() / 1000));
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.close();
  });

  test('a claim reads its batch and the expired leases, not every live lease', async () => {
    await expectScans(/WITH expired AS/, 4 * BATCH);
  });

  /** The result template's text: with the money effect's rows or none, with a claim or none. */
  const template = (rows: boolean, claim: boolean) =>
    new RegExp(
      `^(?${rows ? '=' : '!'}[\\s\\S]*rows_0 AS)(?${claim ? '=' : '!'}[\\s\\S]*expired AS)[\\s\\S]*WITH input AS`,
    );

  test('the result template of a batch finds its rows by primary key, not by walking every live lease', async () => {
    await expectScans(template(true, false), 4 * BATCH, 'messages_pkey');
  });

  test('the result template of one message with its claim finds its row by primary key, and claims from the head', async () => {
    const scans = await scansOf(template(true, true));
    expect(scans.map((s) => s.scan)).toContain('Index Scan on messages_pkey');
    for (const { scan, read } of scans)
      expect({ scan, read: read <= 4 }).toEqual({ scan, read: true });
  });

  test('status, the next due time and the backoff report read the head of each queue, not every ready message', async () => {
    for (const name of [
      /ready_queues[\s\S]*SELECT 'state' AS kind/,
      /AS ready_at/,
      /AS in_backoff/,
    ]) {
      const ready = (await scansOf(name)).filter((s) => s.scan.endsWith('messages_ready_queue'));
      expect(ready.length).toBeGreaterThan(0);
      for (const { scan, read } of ready)
        expect({ scan, read: read <= 4 }).toEqual({ scan, read: true });
    }
  });

  test('a heartbeat, a release and a failure each find their row by primary key', async () => {
    await expectScans(/SET lease_until = /, 4, 'messages_pkey');
    await expectScans(/attempts = CASE WHEN attempts > 0 THEN attempts - 1/, 4, 'messages_pkey');
    await expectScans(template(false, false), 4, 'messages_pkey');
  });
});
