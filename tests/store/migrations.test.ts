// Upgrading a SQLite store made by an earlier release: pending migrations apply on open,
// data intact, and the protocol works on the new schema.
import { Database } from 'bun:sqlite';
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  apply,
  enqueue,
  getIdPolicy,
  type Handler,
  openStore,
  redrive,
  type Store,
  show,
  skip,
  status,
  work,
} from '@onceq/core';
import {
  blockedKeys,
  countsByQueue,
  doctor,
  forgottenBefore,
  listMessages,
  prune,
  storageUse,
} from '@onceq/core/admin';
import {
  claimMany,
  complete,
  effectResult,
  findCounterDrift,
  formatIdPolicy,
} from '@onceq/core/internal';
import { listDeliveries } from '@onceq/core/webhooks';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { sql } from 'kysely';
import { onPostgres } from '../support/backends.ts';
import { testClock } from '../support/factories.ts';
import { postgresStoreAt, sqliteStoreAt } from '../support/old-store.ts';
import { rawDb, rememberTarget } from '../support/raw-db.ts';

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
  // A store exactly as 0001 left it (the full index, no 0002 or later), holding E0001
  // leased at generation 1 until 1002 and E0002 ready since 1000.
  await sqliteStoreAt(path, '0001_initial', (raw) => {
    raw.run(`INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
      lease_until, enqueued_at, updated_at) VALUES
      ('E0001', '{"amount_cents":100,"category":"book"}', 'leased', 1, 1, 1000, 1002, 1000, 1000),
      ('E0002', '{"amount_cents":200,"category":"pen"}', 'ready', 0, 0, 1000, NULL, 1000, 1000)`);
  });
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

/** A 0002 store: E0001 leased (generation 1, until 1002), E0002 ready, E0003 done with its effect, E0004 dead. */
const STORE_0002_ROWS = `INSERT INTO messages (event_id, payload, state, attempts, generation,
  available_at, lease_until, last_error_code, enqueued_at, updated_at) VALUES
  ('E0001', '{"amount_cents":100,"category":"book"}', 'leased', 1, 1, 1000, 1002, NULL, 1000, 1000),
  ('E0002', '{"amount_cents":200,"category":"pen"}', 'ready', 0, 0, 1000, NULL, NULL, 1000, 1000),
  ('E0003', '{"amount_cents":300,"category":"bag"}', 'done', 1, 1, 1000, NULL, NULL, 1000, 1001),
  ('E0004', '{"amount_cents":400,"category":"toy"}', 'dead', 1, 1, 1000, NULL, 'invalid_payload', 1000, 1001)`;
const EFFECT_0002 = `INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES ('E0003', 'bag', 300, 1001)`;

async function expectUpgraded0003(store: Store) {
  // Recorded policy: the lesson's, so an upgraded store means what it meant before.
  expect(formatIdPolicy(await getIdPolicy(store))).toBe('lesson');
  // Data intact, the money included, and the open lease of E0001 still recovered.
  expect(await status(store)).toEqual({
    messages: { ready: 1, leased: 1, done: 1, dead: 1 },
    effects: 1,
    totals: { bag: 300 },
    total: 300,
  });
  const leases = await claimMany(store, { limit: 2 });
  expect(leases.map((l) => [l.eventId, l.generation])).toEqual([
    ['E0002', 1],
    ['E0001', 2],
  ]);
  await rawDb(store, async (db) => {
    // The effects foreign key survived the rebuild: an effect for an unknown message fails.
    await expect(
      db
        .insertInto('effects')
        .values({ event_id: 'E9999', category: 'book', amount_cents: 1, created_at: 1 })
        .execute(),
    ).rejects.toThrow();
    // The relaxed id CHECK: a general id goes in, a space or a 201-byte id never does.
    const row = (event_id: string) => ({
      event_id,
      payload: '{}',
      state: 'ready' as const,
      attempts: 0,
      generation: 0,
      available_at: 1,
      lease_until: null,
      last_error_code: null,
      last_error_detail: null,
      enqueued_at: 1,
      updated_at: 1,
      payload_sha256: null,
      pruned_at: null,
    });
    await db.insertInto('messages').values(row('orders-17:883421')).execute();
    await expect(db.insertInto('messages').values(row('has space')).execute()).rejects.toThrow();
    await expect(
      db
        .insertInto('messages')
        .values(row('x'.repeat(201)))
        .execute(),
    ).rejects.toThrow();
    // The other CHECKs are still there: leased without lease_until, a pruned ready row.
    await expect(
      db
        .insertInto('messages')
        .values({ ...row('E0100'), state: 'leased' })
        .execute(),
    ).rejects.toThrow();
    await expect(
      db
        .insertInto('messages')
        .values({ ...row('E0101'), payload: null, payload_sha256: 'a'.repeat(64), pruned_at: 5 })
        .execute(),
    ).rejects.toThrow();
  });
}

test('a store of 0002 gets 0003 on open (policy table, relaxed id CHECK, tombstone columns), data and open lease intact', async () => {
  const path = join(dir, 'store-0002.db');
  await sqliteStoreAt(path, '0002_lease_index_partial', (raw) => {
    raw.run(STORE_0002_ROWS);
    raw.run(EFFECT_0002);
  });
  const clock = testClock(1005);
  const store = await openStore(path, { clock });
  try {
    await expectUpgraded0003(store);
    // Still STRICT, every index of 0001/0002 rebuilt, no table left from the rebuild.
    const raw = new Database(path, { readonly: true });
    try {
      const objects = raw
        .query<{ type: string; name: string; sql: string | null }, []>(
          "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'onceq_migrations%' ORDER BY name",
        )
        .all();
      expect(objects.map((o) => `${o.type}:${o.name}`)).toEqual([
        'table:completions',
        'table:deliveries',
        'index:deliveries_dead',
        'index:deliveries_due',
        'index:deliveries_lease',
        'table:delivery_attempts',
        'table:disabled_endpoints',
        'table:effects',
        'trigger:effects_count_delete',
        'trigger:effects_count_insert',
        'trigger:effects_count_update',
        'table:messages',
        'trigger:messages_count_delete',
        'trigger:messages_count_insert',
        'trigger:messages_count_payload',
        'trigger:messages_count_queue_delete',
        'trigger:messages_count_queue_insert',
        'trigger:messages_count_queue_update',
        'trigger:messages_count_update',
        'index:messages_dead',
        'index:messages_key',
        'trigger:messages_key_release',
        'index:messages_lease',
        'index:messages_ready_queue',
        'index:messages_state',
        'table:onceq_counts',
        'table:onceq_meta',
      ]);
      for (const o of objects.filter((x) => x.type === 'table')) expect(o.sql).toEndWith('STRICT');
      expect(leaseIndexSql(path)).toBe(
        "CREATE INDEX messages_lease ON messages (lease_until) WHERE state = 'leased'",
      );
    } finally {
      raw.close();
    }
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0002 gets 0003', (target) =>
  test('postgres: a schema of 0002 gets 0003 on open, data and open lease intact', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await postgresStoreAt(target, schema, '0002_lease_index_partial', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${STORE_0002_ROWS}; ${EFFECT_0002}`);
      });
      const store = await openStore(target, { schema, clock: testClock(1005) });
      rememberTarget(store, { target, schema });
      try {
        await expectUpgraded0003(store);
      } finally {
        await store.close();
      }
    } finally {
      const admin = new SQL(target);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** Ids at the edges of the widest policy's envelope: 1-200 characters, each `!` … `~`. */
const ENVELOPE_IN = ['!', '~', 'x'.repeat(200), 'order-2026/11#~!'];
const ENVELOPE_OUT = ['', 'x'.repeat(201), 'a b', 'é', 'tab\there', 'line\n'];

onPostgres('a schema of 0006 gets 0007', (target) =>
  test("postgres: a schema of 0006 gets 0007's cheaper id CHECK on open: stored ids kept, the same envelope refused", async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const admin = new SQL(target);
    try {
      await postgresStoreAt(target, schema, '0006_counts_in_statements', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${STORE_0002_ROWS}`);
      });
      const check = async () =>
        (
          await admin.unsafe(
            `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
             WHERE conname = 'messages_event_id_check' AND connamespace = $1::regnamespace`,
            [schema],
          )
        )[0]?.def;
      expect(await check()).toBe("CHECK ((event_id ~ '^[!-~]{1,200}$'::text))");
      const store = await openStore(target, { schema, clock: testClock(1005) });
      try {
        expect(await check()).toBe(
          "CHECK ((((length(event_id) >= 1) AND (length(event_id) <= 200)) AND (event_id !~ '[^!-~]'::text)))",
        );
        expect((await status(store)).messages).toEqual({ ready: 1, leased: 1, done: 1, dead: 1 });
      } finally {
        await store.close();
      }
      const insert = (id: string) =>
        admin.unsafe(
          `INSERT INTO ${schema}.messages (event_id, payload, state, attempts, generation,
             available_at, enqueued_at, updated_at) VALUES ($1, '{}', 'ready', 0, 0, 1000, 1000, 1000)`,
          [id],
        );
      for (const id of ENVELOPE_IN) await insert(id);
      for (const id of ENVELOPE_OUT) {
        await expect(insert(id)).rejects.toThrow(/messages_event_id_check/);
      }
    } finally {
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

test("sqlite: the id CHECK keeps the same envelope as PostgreSQL's", async () => {
  const path = join(dir, 'envelope.db');
  const store = await openStore(path, { clock: testClock(1000) });
  await store.close();
  const raw = new Database(path);
  try {
    const insert = raw.prepare(
      `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
         enqueued_at, updated_at) VALUES (?1, '{}', 'ready', 0, 0, 1000, 1000, 1000)`,
    );
    for (const id of ENVELOPE_IN) insert.run(id);
    for (const id of ENVELOPE_OUT) expect(() => insert.run(id)).toThrow(/CHECK constraint failed/);
    insert.finalize();
  } finally {
    raw.close();
  }
});

/**
 * What a 0007 store must still be after 0008 (ordering keys): every row and the money
 * intact, the counters right, the open lease recovered, the doctor clean; and keyed
 * messages work on it.
 */
async function expectUpgraded0008(store: Store) {
  expect(await status(store)).toEqual({
    messages: { ready: 1, leased: 1, done: 1, dead: 1 },
    effects: 1,
    totals: { bag: 300 },
    total: 300,
  });
  expect((await doctor(store)).findings).toEqual([]);
  await enqueue(store, [
    { eventId: 'E0010', payload: { category: 'book', amount_cents: 1 }, key: 'K' },
    { eventId: 'E0011', payload: { category: 'book', amount_cents: 2 }, key: 'K' },
  ]);
  expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual([
    'E0002',
    'E0001',
    'E0010',
  ]);
  expect((await show(store, 'E0011')).state).toBe('waiting');
}

test('a store of 0007 gets ordering keys (0008) on open: data, counters, effects and completions intact', async () => {
  const path = join(dir, 'old-0007.db');
  await sqliteStoreAt(path, '0007_event_id_check_by_length', (raw) => {
    raw.run(STORE_0002_ROWS);
    raw.run(EFFECT_0002);
  });
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    await expectUpgraded0008(store);
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0007 gets 0008', (target) =>
  test('postgres: a schema of 0007 gets ordering keys (0008) on open: data and counters intact', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const admin = new SQL(target);
    try {
      await postgresStoreAt(target, schema, '0007_event_id_check_by_length', async (db) => {
        // Since 0006 PostgreSQL's statements count effects themselves: a raw insert adds its count.
        await db.unsafe(`SET search_path TO ${schema}; ${STORE_0002_ROWS}; ${EFFECT_0002};
          INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', 'bag', 1, 300)`);
      });
      const store = await openStore(target, { schema, clock: testClock(1005) });
      try {
        await expectUpgraded0008(store);
      } finally {
        await store.close();
      }
    } finally {
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** Each message delivers one webhook to `hooks`. */
const delivering: Handler = (_payload, context) => ({
  deliver: [{ to: 'hooks', body: { event: context.eventId } }],
});

/** After 0009: the open lease of E0001 (from before) completes with its delivery; the done E0003 has none. */
async function expectDeliveriesAfterUpgrade(store: Store) {
  expect(await listDeliveries(store)).toEqual([]);
  await work(store, delivering);
  expect((await listDeliveries(store)).map((d) => [d.webhookId, d.state])).toEqual([
    ['E0001:1', 'pending'],
    ['E0002:1', 'pending'],
  ]);
  expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 3, dead: 1 });
}

test('a store of 0007 gets the outbox tables of 0009 on open; work records deliveries with its ACKs', async () => {
  const path = join(dir, 'before-0009.db');
  await sqliteStoreAt(path, '0007_event_id_check_by_length', (raw) => {
    raw.run(STORE_0002_ROWS);
    raw.run(EFFECT_0002);
  });
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    await expectDeliveriesAfterUpgrade(store);
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0007 gets 0009', (target) =>
  test('postgres: a schema of 0007 gets the outbox tables of 0009 on open; work records deliveries with its ACKs', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await postgresStoreAt(target, schema, '0007_event_id_check_by_length', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${STORE_0002_ROWS}; ${EFFECT_0002}`);
      });
      const store = await openStore(target, { schema, clock: testClock(1005) });
      try {
        await expectDeliveriesAfterUpgrade(store);
      } finally {
        await store.close();
      }
    } finally {
      const admin = new SQL(target);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** A store of 0009 holding key K blocked by its dead head E0001 (E0002 behind it) and a ready E0003. */
const KEYED_0009_ROWS = `INSERT INTO messages (event_id, payload, state, attempts, generation,
    available_at, lease_until, enqueued_at, updated_at, last_error_code, last_error_detail,
    ordering_key, seq) VALUES
  ('E0001', '{"amount_cents":100,"category":"book"}', 'dead', 1, 1, 1000, NULL, 1000, 1000, 'broken', 'broken', 'K', 1),
  ('E0002', '{"amount_cents":200,"category":"book"}', 'waiting', 0, 0, 1000, NULL, 1000, 1000, NULL, NULL, 'K', 2),
  ('E0003', '{"amount_cents":300,"category":"book"}', 'ready', 0, 0, 1000, NULL, 1000, 1000, NULL, NULL, NULL, NULL)`;

/** After 0010: every message in `default`, the key still blocked and then resumed in order; queues work. */
async function expectQueuesAfterUpgrade(store: Store) {
  expect((await doctor(store)).findings).toEqual([]);
  expect(await blockedKeys(store)).toEqual({
    count: 1,
    keys: [
      {
        queue: 'default',
        key: 'K',
        eventId: 'E0001',
        deadSince: 1000,
        waiting: 1,
        code: 'broken',
        detail: 'broken',
      },
    ],
  });
  expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual(['E0003']);
  await redrive(store, ['E0001']);
  expect((await claimMany(store, { limit: 10 })).map((l) => l.eventId)).toEqual(['E0001']);
  // The same key in another queue is another key: ready at once.
  await enqueue(
    store,
    [{ eventId: 'E0010', payload: { category: 'book', amount_cents: 1 }, key: 'K' }],
    { queue: 'payments' },
  );
  expect((await claimMany(store, { limit: 10, queue: 'payments' })).map((l) => l.eventId)).toEqual([
    'E0010',
  ]);
  expect((await show(store, 'E0002')).state).toBe('waiting');
}

test('a store of 0009 gets queues (0010) on open: every message in default, its blocked key intact', async () => {
  const path = join(dir, 'before-0010.db');
  await sqliteStoreAt(path, '0009_deliveries', (raw) => raw.run(KEYED_0009_ROWS));
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    await expectQueuesAfterUpgrade(store);
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0009 gets 0010', (target) =>
  test('postgres: a schema of 0009 gets queues (0010) on open: every message in default, its blocked key intact', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await postgresStoreAt(target, schema, '0009_deliveries', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${KEYED_0009_ROWS}`);
      });
      const store = await openStore(target, { schema, clock: testClock(1005) });
      try {
        await expectQueuesAfterUpgrade(store);
      } finally {
        await store.close();
      }
    } finally {
      const admin = new SQL(target);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** After 0011: nothing forgotten yet, and a forget records its horizon and deletes old tombstones. */
async function expectDedupWindowAfterUpgrade(store: Store, clock: ReturnType<typeof testClock>) {
  expect(await forgottenBefore(store)).toBe(0);
  await work(store, handlers.v1);
  clock.advance(100 * 86_400);
  await prune(store, { doneOlderThanSeconds: 30 * 86_400 });
  const result = await prune(store, { forgetOlderThanSeconds: 90 * 86_400 });
  expect(result.forgotten).toBe(3);
  expect(await forgottenBefore(store)).toBe(clock() - 90 * 86_400);
  expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 0, dead: 1 });
  expect((await doctor(store)).healthy).toBe(true);
}

test('a store of 0009 gets the dedup window of 0011 on open: nothing forgotten, then forgetting works', async () => {
  const path = join(dir, 'before-0011.db');
  await sqliteStoreAt(path, '0009_deliveries', (raw) => {
    raw.run(STORE_0002_ROWS);
    raw.run(EFFECT_0002);
  });
  const clock = testClock(1005);
  const store = await openStore(path, { clock });
  try {
    await expectDedupWindowAfterUpgrade(store, clock);
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0009 gets 0011', (target) =>
  test('postgres: a schema of 0009 gets the dedup window of 0011 on open: nothing forgotten, then forgetting works', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await postgresStoreAt(target, schema, '0009_deliveries', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${STORE_0002_ROWS}; ${EFFECT_0002};
          INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', 'bag', 1, 300)`);
      });
      const clock = testClock(1005);
      const store = await openStore(target, { schema, clock });
      try {
        await expectDedupWindowAfterUpgrade(store, clock);
      } finally {
        await store.close();
      }
    } finally {
      const admin = new SQL(target);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** A store of 0011 worked with 10 attempts: payments' E0001 ready after 4, E0002 dead after 10; default's E0003 ready. */
const WORKED_0011_ROWS = `INSERT INTO messages (event_id, payload, state, attempts, generation,
    available_at, lease_until, enqueued_at, updated_at, last_error_code, queue) VALUES
  ('E0001', '{"amount_cents":100,"category":"book"}', 'ready', 4, 4, 1000, NULL, 1000, 1000, 'provider_down', 'payments'),
  ('E0002', '{"amount_cents":200,"category":"book"}', 'dead', 10, 10, 1000, NULL, 1000, 1000, 'provider_down', 'payments'),
  ('E0003', '{"amount_cents":300,"category":"book"}', 'ready', 0, 0, 1000, NULL, 1000, 1000, NULL, 'default')`;

/** After 0012: messages counted by queue, and each message's attempt limit the least its state proves. */
async function expectQueueCountsAfterUpgrade(store: Store) {
  expect((await doctor(store)).findings).toEqual([]);
  expect(await countsByQueue(store)).toEqual({
    default: { ready: 1, leased: 0, done: 0, dead: 0 },
    payments: { ready: 1, leased: 0, done: 0, dead: 1 },
  });
  await work(store, handlers.v1, { queues: ['default', 'payments'] });
  expect(await countsByQueue(store)).toEqual({
    default: { ready: 0, leased: 0, done: 1, dead: 0 },
    payments: { ready: 0, leased: 0, done: 1, dead: 1 },
  });
  expect((await doctor(store)).findings).toEqual([]);
}

test('a store of 0011 gets queue counts and attempt limits (0012) on open: counted right, no false attempts report', async () => {
  const path = join(dir, 'before-0012.db');
  await sqliteStoreAt(path, '0011_dedup_window', (raw) => raw.run(WORKED_0011_ROWS));
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    await expectQueueCountsAfterUpgrade(store);
  } finally {
    await store.close();
  }
});

onPostgres('a schema of 0011 gets 0012', (target) =>
  test('postgres: a schema of 0011 gets queue counts and attempt limits (0012) on open: counted right, no false attempts report', async () => {
    const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await postgresStoreAt(target, schema, '0011_dedup_window', async (db) => {
        await db.unsafe(`SET search_path TO ${schema}; ${WORKED_0011_ROWS}`);
      });
      const store = await openStore(target, { schema, clock: testClock(1005) });
      try {
        await expectQueueCountsAfterUpgrade(store);
      } finally {
        await store.close();
      }
    } finally {
      const admin = new SQL(target);
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  }),
);

/** Every migration this build brings, oldest first, as a new store records them. */
async function migrationNames(): Promise<string[]> {
  const path = join(dir, 'latest-names.db');
  await (await openStore(path)).close();
  const raw = new Database(path, { readonly: true });
  try {
    return raw
      .query<{ name: string }, []>('SELECT name FROM onceq_migrations ORDER BY name')
      .all()
      .map((row) => row.name);
  } finally {
    raw.close();
  }
}

/** Every schema version before the release in statement (0013): the stores it upgrades. */
const BEFORE_0013 = (await migrationNames()).filter((name) => name < '0013');

/**
 * A store of `version`: keyed rows once the schema has keys (0008), else the 0002 rows and
 * their effect (on PostgreSQL from 0006 on, a raw effect adds its count by hand: onceq's
 * statements count their effects themselves).
 */
function rowsAt(version: string, backend: 'sqlite' | 'postgres'): string {
  if (version >= '0008') return KEYED_0009_ROWS;
  const count =
    backend === 'postgres' && version >= '0006'
      ? `; INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', 'bag', 1, 300)`
      : '';
  return `${STORE_0002_ROWS}; ${EFFECT_0002}${count}`;
}

/**
 * After 0013, whatever the version upgraded from: a skipped dead head lets its key's next
 * message go, an ACK releases the next message of its key, every key drains to the end,
 * nothing is left waiting and the doctor finds nothing.
 */
async function expectKeysReleasedAfterUpgrade(store: Store, version: string) {
  expect((await doctor(store)).findings).toEqual([]);
  if (version >= '0008') {
    expect(await skip(store, ['E0001'])).toEqual(['E0001']);
    expect((await show(store, 'E0002')).state).toBe('ready');
  }
  await enqueue(
    store,
    [1, 2, 3].map((n) => ({
      eventId: `E010${n}`,
      payload: { category: 'book', amount_cents: n },
      key: 'L',
    })),
  );
  expect((await show(store, 'E0102')).state).toBe('waiting');
  const leases = await claimMany(store, { limit: 10 });
  const head = leases.find((lease) => lease.eventId.startsWith('E010'));
  expect(head?.eventId).toBe('E0101');
  for (const lease of leases) await apply(store, lease, handlers.v1);
  expect((await show(store, 'E0102')).state).toBe('ready');
  await work(store, handlers.v1);
  for (const id of ['E0101', 'E0102', 'E0103']) expect((await show(store, id)).state).toBe('done');
  expect((await status(store)).messages.waiting ?? 0).toBe(0);
  expect((await doctor(store)).findings).toEqual([]);
}

/**
 * For each of `versions`, a SQLite store and a PostgreSQL schema built at that version and
 * filled with `rows(version, backend)`, opened at the current schema (upgraded), then
 * handed to `check`. `what` names the upgrade in the tests' titles.
 */
function upgradesFromEach(
  versions: readonly string[],
  what: string,
  rows: (version: string, backend: 'sqlite' | 'postgres') => string,
  check: (store: Store, version: string) => Promise<void>,
) {
  const slug = what.replace(/\W+/g, '-');
  for (const version of versions) {
    test(`a store of ${version} gets ${what} on open`, async () => {
      const path = join(dir, `${slug}-from-${version}.db`);
      await sqliteStoreAt(path, version, (raw) => raw.exec(rows(version, 'sqlite')));
      const store = await openStore(path, { clock: testClock(1005) });
      try {
        await check(store, version);
      } finally {
        await store.close();
      }
    });
  }
  onPostgres(`schemas of every version get ${what}`, (target) => {
    for (const version of versions) {
      test(`postgres: a schema of ${version} gets ${what} on open`, async () => {
        const schema = `m_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
        try {
          await postgresStoreAt(target, schema, version, async (db) => {
            await db.unsafe(`SET search_path TO ${schema}; ${rows(version, 'postgres')}`);
          });
          const store = await openStore(target, { schema, clock: testClock(1005) });
          rememberTarget(store, { target, schema });
          try {
            await check(store, version);
          } finally {
            await store.close();
          }
        } finally {
          const admin = new SQL(target);
          await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await admin.close();
        }
      });
    }
  });
}

upgradesFromEach(
  BEFORE_0013,
  'the release in statement (0013): keys released by skip and by ACK',
  rowsAt,
  expectKeysReleasedAfterUpgrade,
);

/**
 * A store of 0013 with a message of every kind of child: done messages with an effect and
 * a delivery, and with a completion, a blocked key with a message waiting behind it, and a
 * ready message.
 */
const FAMILY_0013_ROWS = `${KEYED_0009_ROWS};
  INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
    lease_until, enqueued_at, updated_at) VALUES
  ('E0004', '{"amount_cents":400,"category":"pen"}', 'done', 1, 1, 1000, NULL, 1000, 1001),
  ('E0005', '{"amount_cents":500,"category":"pen"}', 'done', 1, 1, 1000, NULL, 1000, 1001);
  INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES ('E0004', 'pen', 400, 1001);
  INSERT INTO completions (event_id, summary, created_at) VALUES ('E0005', 'pen 500', 1001);
  INSERT INTO deliveries (event_id, key, endpoint, body) VALUES ('E0004', 'paid', 'shop', '{}')`;

/** The programs SQLite runs for an ACK and for an effect's count: no temporary b-tree in either. */
function temporaryTreesOfHotWrites(path: string): number {
  const raw = new Database(path);
  try {
    const opens = (text: string) =>
      raw
        .query<{ opcode: string }, []>(`EXPLAIN ${text}`)
        .all()
        .filter((op) => op.opcode === 'OpenEphemeral').length;
    return (
      opens(
        "UPDATE messages SET state = 'done', lease_until = NULL, updated_at = 1 WHERE event_id = 'E0003'",
      ) +
      opens(
        "INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES ('E0003', 'book', 1, 1)",
      )
    );
  } finally {
    raw.close();
  }
}

test('a store of 0013 gets its state and counter CHECKs without lists (0014) on open: every row and child kept, the same states refused', async () => {
  const path = join(dir, 'before-0014.db');
  await sqliteStoreAt(path, '0013_release_in_statement', (raw) => raw.exec(FAMILY_0013_ROWS));
  expect(temporaryTreesOfHotWrites(path)).toBeGreaterThan(0);
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    expect(temporaryTreesOfHotWrites(path)).toBe(0);
    expect((await doctor(store)).findings).toEqual([]);
    expect(await status(store)).toMatchObject({
      messages: { ready: 1, done: 2, dead: 1, waiting: 1 },
      effects: 1,
      total: 400,
    });
    const raw = new Database(path);
    try {
      expect(raw.query('PRAGMA foreign_key_check').all()).toEqual([]);
      expect(raw.query('SELECT summary FROM completions').all()).toEqual([{ summary: 'pen 500' }]);
      expect(() =>
        raw.run("UPDATE messages SET state = 'paused' WHERE event_id = 'E0003'"),
      ).toThrow(/CHECK constraint failed/);
      expect(() =>
        raw.run("INSERT INTO onceq_counts (kind, key, n, total) VALUES ('other', 'x', 0, 0)"),
      ).toThrow(/CHECK constraint failed/);
    } finally {
      raw.close();
    }
    expect((await listDeliveries(store)).map((d) => d.eventId)).toEqual(['E0004']);
    await redrive(store, ['E0001']);
    await work(store, handlers.v1);
    for (const id of ['E0001', 'E0002', 'E0003'])
      expect((await show(store, id)).state).toBe('done');
    expect((await doctor(store)).findings).toEqual([]);
  } finally {
    await store.close();
  }
});

/** Every schema version before the counted payloads (0017): the stores it upgrades. */
const BEFORE_0017 = (await migrationNames()).filter((name) => name < '0017');

/** A dead message's tombstone beside {@link rowsAt}'s rows, once the schema has them (0003). */
const TOMBSTONE = `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
    lease_until, last_error_code, enqueued_at, updated_at, payload_sha256, pruned_at) VALUES
  ('E0009', NULL, 'dead', 1, 1, 1000, NULL, 'invalid_payload', 1000, 1001, '${'ab'.repeat(32)}', 1002)`;

const rowsWithTombstone = (version: string, backend: 'sqlite' | 'postgres') =>
  version >= '0003' ? `${rowsAt(version, backend)}; ${TOMBSTONE}` : rowsAt(version, backend);

/**
 * After 0017, whatever the version upgraded from: the counters say how many messages keep
 * their payload and its bytes (measured here from the rows), the rest are tombstones, the
 * doctor agrees, and a prune counts the payloads it drops.
 */
async function expectPayloadsCountedAfterUpgrade(store: Store, version: string) {
  const kept = async () => {
    const { rows } = await rawDb(store, (db) =>
      sql<{ payload: string }>`SELECT payload FROM messages WHERE payload IS NOT NULL`.execute(db),
    );
    return { live: rows.length, bytes: rows.reduce((s, r) => s + Buffer.byteLength(r.payload), 0) };
  };
  const before = await kept();
  expect(before.live).toBeGreaterThan(0);
  const use = await storageUse(store);
  const stored = Object.values((await status(store)).messages).reduce((s, n) => s + (n ?? 0), 0);
  expect([use.events, use.live, use.pruned, use.payloadBytes]).toEqual([
    stored,
    before.live,
    stored - before.live,
    before.bytes,
  ]);
  expect(use.pruned).toBe(version >= '0003' ? 1 : 0);
  expect((await doctor(store)).findings).toEqual([]);
  await prune(store, { doneOlderThanSeconds: 1, deadOlderThanSeconds: 1 });
  const after = await kept();
  expect(after.live).toBeLessThan(before.live);
  expect(await storageUse(store)).toMatchObject({ live: after.live, payloadBytes: after.bytes });
  expect((await doctor(store)).findings).toEqual([]);
}

upgradesFromEach(
  BEFORE_0017,
  'counted payloads (0017): live and pruned events right, prune counted',
  rowsWithTombstone,
  expectPayloadsCountedAfterUpgrade,
);

const BEFORE_0019 = (await migrationNames()).filter((name) => name < '0019');

/**
 * After 0019, whatever the version upgraded from: a key's positions are where the
 * backend reads them (PostgreSQL: `message_keys`, filled from the messages; SQLite: the
 * messages themselves), the blocked key counts its waiting message there, and a skip,
 * an ACK and an ordered enqueue release and order keys through them (as after 0013).
 */
async function expectKeyPositionsAfterUpgrade(store: Store, version: string) {
  const positions =
    store.kind === 'postgres'
      ? sql`SELECT event_id, seq FROM message_keys ORDER BY seq`
      : sql`SELECT event_id, seq FROM messages WHERE ordering_key IS NOT NULL ORDER BY seq`;
  const { rows } = await rawDb(
    store,
    (db) => positions.execute(db) as Promise<{ rows: { event_id: string; seq: unknown }[] }>,
  );
  expect(rows.map((r) => [r.event_id, Number(r.seq)])).toEqual(
    version >= '0008'
      ? [
          ['E0001', 1],
          ['E0002', 2],
        ]
      : [],
  );
  if (version >= '0008') expect((await blockedKeys(store)).keys[0]?.waiting).toBe(1);
  // Rows written by hand into a store of 0017 or later are not in its payload counters.
  if (version >= '0017') await doctor(store, { fix: true });
  await expectKeysReleasedAfterUpgrade(store, version);
}

upgradesFromEach(
  BEFORE_0019,
  'the key positions (0019): backfilled, and keys released and ordered through them',
  rowsAt,
  expectKeyPositionsAfterUpgrade,
);

const BEFORE_0020 = (await migrationNames()).filter((name) => name < '0020');

/**
 * After 0020, whatever the version upgraded from: the write that finishes a key's head
 * hands its next message to its own claim, which has room (it took every ready message
 * there was), and the counters agree.
 */
async function expectReleaseIntoClaimAfterUpgrade(store: Store, version: string) {
  // Rows written by hand into a store of 0017 or later are not in its payload counters.
  if (version >= '0017') await doctor(store, { fix: true });
  await enqueue(
    store,
    [1, 2].map((n) => ({
      eventId: `E020${n}`,
      payload: { category: 'book', amount_cents: n },
      key: 'M',
    })),
  );
  const head = (await claimMany(store, { limit: 50 })).find((l) => l.eventId === 'E0201');
  if (head === undefined) throw new Error('the head of key M was not claimed');
  const { claimed } = await complete(
    store,
    [{ lease: head, result: effectResult({ category: 'book', amountCents: 1 }) }],
    {
      claimNext: { limit: 50, leaseSeconds: 30, maxAttempts: 3, queue: 'default', onDead: 'block' },
    },
  );
  expect(claimed?.map((l) => l.eventId)).toContain('E0202');
  expect((await show(store, 'E0202')).state).toBe('leased');
  expect(await findCounterDrift(store)).toEqual([]);
}

upgradesFromEach(
  BEFORE_0020,
  "a key's next message leased to the claim that finishes its head (0020)",
  rowsAt,
  expectReleaseIntoClaimAfterUpgrade,
);

const BEFORE_0021 = (await migrationNames()).filter((name) => name < '0021');

/** The definition of `messages_state` as the store holds it. */
async function stateIndexDefinition(store: Store): Promise<string> {
  const query =
    store.kind === 'postgres'
      ? sql<{ definition: string }>`SELECT indexdef AS definition FROM pg_indexes
          WHERE indexname = 'messages_state' AND schemaname = current_schema()`
      : sql<{ definition: string }>`SELECT sql AS definition FROM sqlite_master
          WHERE name = 'messages_state'`;
  const { rows } = await rawDb(store, (db) => query.execute(db));
  return rows[0]?.definition ?? '';
}

/**
 * After 0021, whatever the version upgraded from: `messages_state` names the finished
 * states only, and a waiting message is still listed by its state, released when its
 * head is done, and the counters and the doctor agree.
 */
async function expectWaitingOutsideStateIndexAfterUpgrade(store: Store, version: string) {
  const definition = await stateIndexDefinition(store);
  expect(definition).toContain("'skipped'");
  expect(definition).not.toContain("'waiting'");
  // Rows written by hand into a store of 0017 or later are not in its payload counters.
  if (version >= '0017') await doctor(store, { fix: true });
  await enqueue(
    store,
    [1, 2].map((n) => ({
      eventId: `E021${n}`,
      payload: { category: 'book', amount_cents: n },
      key: 'W',
    })),
  );
  const waiting = await listMessages(store, { state: 'waiting' });
  expect(waiting.messages.map((m) => m.eventId)).toContain('E0212');
  await work(store, handlers.v1);
  for (const id of ['E0211', 'E0212']) expect((await show(store, id)).state).toBe('done');
  expect(
    (await listMessages(store, { state: 'waiting' })).messages.map((m) => m.eventId),
  ).not.toContain('E0212');
  expect(await findCounterDrift(store)).toEqual([]);
  expect((await doctor(store)).findings).toEqual([]);
}

/** {@link rowsAt}'s rows, with their key positions where PostgreSQL keeps them apart (0019). */
const rowsWithPositions = (version: string, backend: 'sqlite' | 'postgres') =>
  backend === 'postgres' && version >= '0019'
    ? `${rowsAt(version, backend)}; INSERT INTO message_keys (queue, ordering_key, seq, event_id)
        SELECT queue, ordering_key, seq, event_id FROM messages WHERE ordering_key IS NOT NULL`
    : rowsAt(version, backend);

upgradesFromEach(
  BEFORE_0021,
  'waiting messages outside the index by state (0021)',
  rowsWithPositions,
  expectWaitingOutsideStateIndexAfterUpgrade,
);

const BEFORE_0022 = (await migrationNames()).filter((name) => name < '0022');

/**
 * {@link rowsAt}'s 0002 rows and their effect (whatever the version), and a message done
 * with a completion once the schema has them (0005).
 */
const rowsWithCompletion = (version: string, backend: 'sqlite' | 'postgres') => {
  const completion =
    version >= '0005'
      ? `; INSERT INTO messages (event_id, payload, state, attempts, generation, available_at,
          lease_until, last_error_code, enqueued_at, updated_at) VALUES
          ('E0005', '{"amount_cents":500,"category":"pen"}', 'done', 1, 1, 1000, NULL, NULL, 1000, 1001);
        INSERT INTO completions (event_id, summary, created_at) VALUES ('E0005', 'pen 500', 1001)`
      : '';
  // From 0008 on rowsAt writes keyed rows; 0007's are the 0002 rows with their count.
  return `${rowsAt(version < '0008' ? version : '0007', backend)}${completion}`;
};

/**
 * After 0022, whatever the version upgraded from: on SQLite `effects` and `completions`
 * are stored by their primary key (no rowid), with every row kept; on both backends the
 * effects are counted as they are written, the totals are right, and the doctor agrees.
 */
async function expectKeyedByEventIdAfterUpgrade(store: Store, version: string) {
  // Rows written by hand into a store of 0017 or later are not in its payload counters.
  if (version >= '0017') await doctor(store, { fix: true });
  if (store.kind === 'sqlite') {
    const { rows } = await rawDb(store, (db) =>
      sql<{ name: string; sql: string }>`SELECT name, sql FROM sqlite_master
        WHERE name IN ('effects', 'completions') ORDER BY name`.execute(db),
    );
    // A store older than 0005 gets `completions` from 0005 on its way up.
    expect(rows.map((r) => [r.name, r.sql.includes('WITHOUT ROWID')])).toEqual([
      ['completions', true],
      ['effects', true],
    ]);
  }
  const effects = await rawDb(store, (db) =>
    sql<{ event_id: string; category: string; amount_cents: unknown }>`SELECT event_id, category,
      amount_cents FROM effects`.execute(db),
  );
  expect(effects.rows.map((r) => [r.event_id, r.category, Number(r.amount_cents)])).toEqual([
    ['E0003', 'bag', 300],
  ]);
  const completions = await rawDb(store, (db) =>
    sql<{ event_id: string; summary: string }>`SELECT event_id, summary FROM completions`.execute(
      db,
    ),
  );
  expect(completions.rows.map((r) => [r.event_id, r.summary])).toEqual(
    version >= '0005' ? [['E0005', 'pen 500']] : [],
  );
  await work(store, handlers.v1);
  expect(await status(store)).toMatchObject({ effects: 3, total: 600 });
  expect(await findCounterDrift(store)).toEqual([]);
  expect((await doctor(store)).findings).toEqual([]);
}

upgradesFromEach(
  BEFORE_0022,
  'effects and completions stored by event id (0022)',
  rowsWithCompletion,
  expectKeyedByEventIdAfterUpgrade,
);

test("a store of 0021 made with incremental auto-vacuum gives 0022's dropped tables' pages back on open", async () => {
  const path = join(dir, 'keyed-by-event-id-pages.db');
  // auto_vacuum takes effect only before the first table: set it on the empty file.
  const empty = new Database(path, { create: true });
  empty.run('PRAGMA auto_vacuum = INCREMENTAL');
  empty.run('VACUUM');
  empty.close();
  await sqliteStoreAt(path, '0021_waiting_outside_state_index', (raw) =>
    raw.exec(rowsWithCompletion('0021', 'sqlite')),
  );
  const pages = () => {
    const raw = new Database(path, { readonly: true });
    try {
      return raw
        .query<{ mode: number; free: number; count: number }, []>(
          `SELECT (SELECT auto_vacuum FROM pragma_auto_vacuum) AS mode,
            (SELECT freelist_count FROM pragma_freelist_count) AS free,
            (SELECT page_count FROM pragma_page_count) AS count`,
        )
        .get();
    } finally {
      raw.close();
    }
  };
  const before = pages();
  expect(before?.mode).toBe(2);
  const store = await openStore(path, { clock: testClock(1005) });
  try {
    await expectKeyedByEventIdAfterUpgrade(store, '0021');
  } finally {
    await store.close();
  }
  const after = pages();
  expect(after?.free).toBe(0);
  // Two tables of one page each and their two id indexes became two tables.
  expect(after?.count).toBeLessThan(before?.count ?? 0);
});
