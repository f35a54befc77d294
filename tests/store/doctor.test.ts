// `doctor` catches each broken invariant planted on purpose with direct SQL, on both
// backends: a fresh store per test (factories), the demo worked through, then one fault.

import { Database as BunDatabase } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { readFileSync, writeFileSync } from 'node:fs';
import {
  claim,
  enqueue,
  openStore,
  type Store,
  show,
  status,
  TemporaryFailure,
  work,
} from '@onceq/core';
import { type DoctorReport, doctor, prune, storageUse } from '@onceq/core/admin';
import { checkConnections } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { enqueueDemo, freshStore } from '../conformance/harness.ts';
import { forEachBackend, onPostgres } from '../support/backends.ts';
import {
  type BackendFactory,
  batch,
  line,
  paid,
  postgresFactory,
  sqliteFactory,
} from '../support/factories.ts';

/** Where the current test's store lives, for {@link run}. */
let current: { target: string; schema?: string | undefined } = { target: '' };

/**
 * Direct SQL on the store, around the protocol: a second connection (SQLite: bun:sqlite,
 * PostgreSQL: Bun.SQL in the test's schema). The store's own connection is idle meanwhile.
 */
async function run(store: Store, text: string): Promise<void> {
  if (store.kind === 'sqlite') {
    const raw = new BunDatabase(current.target);
    try {
      raw.run(text);
    } finally {
      raw.close();
    }
    return;
  }
  const db = new SQL(current.target);
  try {
    await db.unsafe(`SET search_path TO ${current.schema}; ${text}`);
  } finally {
    await db.close();
  }
}

/** The checks that found a problem, each once. */
const problems = (report: DoctorReport) => [
  ...new Set(report.findings.filter((f) => f.severity === 'problem').map((f) => f.check)),
];
const messageOf = (report: DoctorReport, check: string) =>
  report.findings.find((f) => f.check === check)?.message ?? '';

/** Lets a statement break a CHECK: SQLite ignores CHECKs on this connection, PostgreSQL drops one. */
async function withoutCheck(store: Store, pgConstraint: string, statement: string) {
  if (store.kind === 'sqlite') {
    await run(store, `PRAGMA ignore_check_constraints = ON; ${statement}`);
  } else {
    await run(store, `ALTER TABLE messages DROP CONSTRAINT ${pgConstraint}`);
    await run(store, statement);
  }
}

function doctorSuite(factory: BackendFactory) {
  describe(`${factory.name}: doctor`, () => {
    const env = freshStore(factory);

    /** E0001–E0003 done, E0004 dead (the demo under v1), then pruned a day later. */
    async function worked() {
      const { store, clock, target, schema } = env();
      current = { target, schema };
      await enqueueDemo(store);
      await work(store, handlers.v1);
      clock.advance(86_400);
      await prune(store, { doneOlderThanSeconds: 3600 });
      return store;
    }

    test('a sound store is healthy: every check ran, nothing found', async () => {
      const report = await doctor(await worked());
      expect(report.findings).toEqual([]);
      expect(report.healthy).toBe(true);
      expect(report.schemaVersion).toBe('0022_keyed_by_event_id');
      expect(report.checks).toContain('schema_drift');
      expect(report.checks).toContain('invariants');
    });

    test('a done message without its effect', async () => {
      const store = await worked();
      await run(store, "DELETE FROM effects WHERE event_id = 'E0002'");
      const report = await doctor(store);
      expect(report.healthy).toBe(false);
      expect(problems(report)).toEqual(['done_without_outcome']);
      expect(messageOf(report, 'done_without_outcome')).toContain(
        '1 message done without a recorded outcome (every done message has exactly one: an effect or a completion): E0002',
      );
    });

    test('an effect on a message that is not done', async () => {
      const store = await worked();
      await run(store, "UPDATE messages SET state = 'dead' WHERE event_id = 'E0001'");
      // PostgreSQL's state changes are counted by onceq's own statements, not by a
      // trigger: a state edited by hand is counter drift there too.
      expect(problems(await doctor(store))).toEqual(
        store.kind === 'sqlite' ? ['outcome_without_done'] : ['outcome_without_done', 'counters'],
      );
    });

    test('an effect whose message does not exist (foreign key bypassed)', async () => {
      const store = await worked();
      if (store.kind === 'sqlite') {
        // A new connection has foreign keys off unless it turns them on.
        await run(store, "INSERT INTO effects VALUES ('E9999', 'book', 1, 1)");
      } else {
        await run(store, 'ALTER TABLE effects DROP CONSTRAINT effects_event_id_fkey');
        await run(store, "INSERT INTO effects VALUES ('E9999', 'book', 1, 1)");
      }
      const found = problems(await doctor(store));
      expect(found).toContain('effect_without_message');
      // SQLite's own check agrees; on PostgreSQL the dropped constraint is schema drift.
      expect(found).toContain(store.kind === 'sqlite' ? 'foreign_key_check' : 'schema_drift');
    });

    test('counters that disagree with the rows (edited by hand) are a problem; --fix recomputes them', async () => {
      const store = await worked();
      const truth = await status(store);
      await run(
        store,
        "INSERT INTO onceq_counts (kind, key, n, total) VALUES ('effect', 'toy', 2, 500)",
      );
      // SQLite keeps one row per key; PostgreSQL sums delta rows per key.
      await run(
        store,
        store.kind === 'sqlite'
          ? "UPDATE onceq_counts SET n = n + 7 WHERE kind = 'state' AND key = 'ready'"
          : "INSERT INTO onceq_counts (kind, key, n, total) VALUES ('state', 'ready', 7, 0)",
      );
      expect((await status(store)).messages.ready).toBe(truth.messages.ready + 7);
      const report = await doctor(store);
      expect(problems(report)).toEqual(['counters']);
      expect(messageOf(report, 'counters')).toContain(
        `ready messages counted ${truth.messages.ready + 7}, really ${truth.messages.ready}`,
      );
      expect(messageOf(report, 'counters')).toContain(
        'effects of category toy counted 2, really 0 (sum 500, really 0)',
      );
      const fixed = await doctor(store, { fix: true });
      expect(fixed.findings.map((f) => [f.check, f.fixed])).toEqual([['counters', true]]);
      expect(fixed.healthy).toBe(true);
      expect(await status(store)).toEqual(truth);
      expect((await doctor(store)).findings).toEqual([]);
    });

    test('a storage counter that disagrees with the payloads is a problem; --fix recomputes it', async () => {
      const store = await worked();
      const truth = await storageUse(store);
      await run(
        store,
        store.kind === 'sqlite'
          ? "UPDATE onceq_counts SET n = n - 1, total = total + 40 WHERE kind = 'storage' AND key = 'payload'"
          : "INSERT INTO onceq_counts (kind, key, n, total) VALUES ('storage', 'payload', -1, 40)",
      );
      expect(await storageUse(store)).toMatchObject({
        live: truth.live - 1,
        pruned: truth.pruned + 1,
        payloadBytes: truth.payloadBytes + 40,
      });
      const report = await doctor(store);
      expect(problems(report)).toEqual(['counters']);
      expect(messageOf(report, 'counters')).toContain(
        `messages that keep their payload counted ${truth.live - 1}, really ${truth.live} (${truth.payloadBytes + 40} payload bytes, really ${truth.payloadBytes})`,
      );
      const fixed = await doctor(store, { fix: true });
      expect(fixed.findings.map((f) => [f.check, f.fixed])).toEqual([['counters', true]]);
      expect(await storageUse(store)).toMatchObject({
        live: truth.live,
        payloadBytes: truth.payloadBytes,
      });
    });

    test('after --fix recounts, every state keeps its counter: a keyed message that waits is counted', async () => {
      const store = await worked();
      await run(
        store,
        store.kind === 'sqlite'
          ? "UPDATE onceq_counts SET n = n + 1 WHERE kind = 'state' AND key = 'ready'"
          : "INSERT INTO onceq_counts (kind, key, n, total) VALUES ('state', 'ready', 1, 0)",
      );
      expect((await doctor(store, { fix: true })).healthy).toBe(true);
      await enqueue(
        store,
        [1, 2].map((n) => ({
          eventId: `E900${n}`,
          payload: { category: 'book', amount_cents: n },
          key: 'k',
        })),
      );
      expect((await status(store)).messages.waiting).toBe(1);
      expect((await doctor(store)).findings).toEqual([]);
    });

    test('leased without lease_until (CHECK bypassed)', async () => {
      const store = await worked();
      await withoutCheck(
        store,
        'messages_check',
        "UPDATE messages SET state = 'leased' WHERE event_id = 'E0004'",
      );
      const report = await doctor(store);
      expect(problems(report)).toContain('lease_mismatch');
      expect(messageOf(report, 'lease_mismatch')).toContain('E0004');
    });

    test('attempts beyond the budget or above the generation', async () => {
      const store = await worked();
      await run(store, "UPDATE messages SET attempts = 7 WHERE event_id = 'E0003'");
      const report = await doctor(store);
      expect(problems(report)).toEqual(['attempts_out_of_bounds']);
      expect(messageOf(report, 'attempts_out_of_bounds')).toContain('E0003');
    });

    test("attempts are bounded by the policy each message was claimed under, not the store's 3", async () => {
      const { store, clock, target, schema } = env();
      current = { target, schema };
      await enqueue(
        store,
        batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 200))),
      );
      const down = () => {
        throw new TemporaryFailure('provider_down', 'the provider is down');
      };
      // E0001: 5 claims under 10 attempts, ready for a sixth; E0002: dead after its 4.
      await work(store, down, { attempts: 10, backoff: [1], max: 1 });
      await work(store, down, { attempts: 4, backoff: [1], max: 1 });
      for (let i = 0; i < 4; i++) {
        clock.advance(1);
        await work(store, down, { attempts: 10, backoff: [1], max: 1 });
        if (i < 3) await work(store, down, { attempts: 4, backoff: [1], max: 1 });
      }
      expect((await show(store, 'E0001')).attempts).toBe(5);
      expect((await show(store, 'E0001')).state).toBe('ready');
      expect((await show(store, 'E0002')).attempts).toBe(4);
      expect((await show(store, 'E0002')).state).toBe('dead');
      expect((await doctor(store)).findings).toEqual([]);
      // A message with more attempts than its claim allowed is still caught.
      await run(store, "UPDATE messages SET max_attempts = 5 WHERE event_id = 'E0001'");
      const report = await doctor(store);
      expect(problems(report)).toEqual(['attempts_out_of_bounds']);
      expect(messageOf(report, 'attempts_out_of_bounds')).toContain(': E0001');
    });

    test('a tombstone whose hash is not a SHA-256', async () => {
      const store = await worked();
      await run(
        store,
        `UPDATE messages SET payload_sha256 = '${'Z'.repeat(64)}' WHERE event_id = 'E0001'`,
      );
      expect(problems(await doctor(store))).toEqual(['tombstone_inconsistent']);
    });

    test('a tombstone of a ready message (CHECK bypassed)', async () => {
      const store = await worked();
      await withoutCheck(
        store,
        'messages_pruned_state',
        "UPDATE messages SET state = 'ready' WHERE event_id = 'E0004' AND 1 = 1",
      );
      await withoutCheck(
        store,
        'messages_pruned_payload',
        `UPDATE messages SET payload = NULL, pruned_at = 5, payload_sha256 = '${'a'.repeat(64)}' WHERE event_id = 'E0004'`,
      );
      expect(problems(await doctor(store))).toContain('tombstone_inconsistent');
    });

    test('an ordering key with two heads, a message off its position, and a waiting message with nothing before it', async () => {
      const store = await worked();
      const events = ['E0101', 'E0102', 'E0103'].map((eventId) => ({
        eventId,
        payload: { category: 'book', amount_cents: 1 },
        key: 'K',
      }));
      await enqueue(store, events);
      expect(problems(await doctor(store))).toEqual([]);
      if (store.kind === 'postgres') {
        // Positions apart from the messages (migration 0019): one removed is caught.
        await run(store, "DELETE FROM message_keys WHERE event_id = 'E0102'");
        expect(problems(await doctor(store))).toEqual(['key_position_mismatch']);
        await run(store, "INSERT INTO message_keys VALUES ('default', 'K', 2, 'E0102')");
        expect(problems(await doctor(store))).toEqual([]);
      }
      await run(store, "UPDATE messages SET state = 'ready' WHERE event_id = 'E0102'");
      expect(problems(await doctor(store))).toContain('key_two_heads');
      // Deleted behind the protocol's back: nothing before E0103 will ever release it.
      await run(store, "DELETE FROM messages WHERE event_id IN ('E0101', 'E0102')");
      const stuck = problems(await doctor(store));
      expect(stuck).toContain('key_stuck');
      // PostgreSQL keeps the deleted messages' positions: the doctor names them.
      expect(stuck.includes('key_position_orphan')).toBe(store.kind === 'postgres');
    });

    test('stored ids that do not fit the recorded id policy, and an unreadable policy', async () => {
      const store = await worked();
      await run(store, "UPDATE onceq_meta SET value = 'pattern:E000[12]' WHERE key = 'id_policy'");
      const report = await doctor(store);
      expect(problems(report)).toEqual(['id_policy']);
      expect(messageOf(report, 'id_policy')).toContain('2 stored event ids do not fit');
      await run(store, "UPDATE onceq_meta SET value = 'strict' WHERE key = 'id_policy'");
      expect(messageOf(await doctor(store), 'id_policy')).toContain('unreadable');
    });

    test('schema drift: a dropped index and a migration this code does not know', async () => {
      const store = await worked();
      await run(store, 'DROP INDEX messages_state');
      await run(
        store,
        "INSERT INTO onceq_migrations (name, timestamp) VALUES ('0099_future', '2027-01-01T00:00:00.000Z')",
      );
      const report = await doctor(store);
      expect(problems(report).sort()).toEqual(['schema_drift', 'schema_version']);
      expect(messageOf(report, 'schema_drift')).toContain('missing index messages_state');
      expect(messageOf(report, 'schema_version')).toContain('0099_future');
    });

    test("the application's own tables beside onceq's are named in an info line, never a problem", async () => {
      const store = await worked();
      await run(store, 'CREATE TABLE orders (id TEXT PRIMARY KEY, total_cents INTEGER NOT NULL)');
      await run(store, 'CREATE INDEX orders_by_total ON orders (total_cents)');
      await run(store, 'CREATE VIEW order_totals AS SELECT sum(total_cents) AS total FROM orders');
      const report = await doctor(store);
      expect(problems(report)).toEqual([]);
      expect(report.healthy).toBe(true);
      expect(report.findings).toEqual([
        {
          check: 'schema_drift',
          severity: 'info',
          message: "tables and views that are not onceq's, not checked: order_totals, orders",
        },
      ]);
    });

    test("an object added to onceq's own table is drift, whatever else the store holds", async () => {
      const store = await worked();
      await run(store, 'CREATE TABLE orders (id TEXT PRIMARY KEY)');
      await run(store, 'CREATE INDEX messages_by_payload ON messages (payload)');
      const report = await doctor(store);
      expect(problems(report)).toEqual(['schema_drift']);
      expect(messageOf(report, 'schema_drift')).toContain('unexpected index messages_by_payload');
    });

    test('a lease expired long ago is a warning, the store still healthy', async () => {
      const { store, clock, target, schema } = env();
      current = { target, schema };
      await enqueue(store, batch(line('E0001', paid('book', 1))));
      await claim(store);
      clock.advance(2 * 3600);
      const report = await doctor(store);
      expect(report.healthy).toBe(true);
      expect(report.findings.map((f) => [f.check, f.severity])).toEqual([
        ['stale_leases', 'warning'],
      ]);
    });
  });
}

forEachBackend('doctor', doctorSuite);

test('sqlite: integrity_check catches a corrupted index page', async () => {
  const { store, target, cleanup } = await sqliteFactory.open(() => 1000);
  try {
    await enqueue(
      store,
      batch(
        ...Array.from({ length: 400 }, (_, i) =>
          line(`E${String(i).padStart(4, '0')}`, paid('book', i + 1)),
        ),
      ),
    );
    await store.close();
    const raw = new BunDatabase(target, { readonly: true });
    const page = (
      raw.query("select rootpage from sqlite_master where name = 'messages_ready_queue'").get() as {
        rootpage: number;
      }
    ).rootpage;
    raw.close();
    // Scribble over the index's root page after its header (page size 4096).
    const bytes = readFileSync(target);
    bytes.fill(0x7f, (page - 1) * 4096 + 12, page * 4096);
    writeFileSync(target, bytes);
    const reopened = await openStore(target, { clock: () => 1000 });
    try {
      const report = await doctor(reopened);
      expect(problems(report)).toContain('integrity_check');
      expect(report.healthy).toBe(false);
    } finally {
      await reopened.close();
    }
  } finally {
    await cleanup().catch(() => {});
  }
});

onPostgres('doctor statistics', () =>
  test('postgres: missing statistics after a large load are a warning that keeps the store healthy; --fix runs ANALYZE', async () => {
    const { store, cleanup, target, schema } = await postgresFactory.open(() => 1000);
    current = { target, schema };
    try {
      // Autovacuum off for this table, so nothing analyzes it behind the test's back.
      await run(store, 'ALTER TABLE messages SET (autovacuum_enabled = false)');
      await run(
        store,
        `INSERT INTO messages (event_id, payload, state, attempts, generation, available_at, enqueued_at, updated_at)
         SELECT 'bulk-' || g, '{}', 'ready', 0, 0, 1000, 1000, 1000 FROM generate_series(1, 2000) g`,
      );
      await run(store, "UPDATE onceq_meta SET value = 'general' WHERE key = 'id_policy'");
      const before = await doctor(store);
      expect(before.healthy).toBe(true);
      expect(problems(before)).toEqual([]);
      expect(before.findings.map((f) => [f.check, f.severity])).toEqual([
        ['statistics', 'warning'],
      ]);
      expect(messageOf(before, 'statistics')).toContain('messages');
      const fixed = await doctor(store, { fix: true });
      expect(fixed.healthy).toBe(true);
      expect(fixed.findings.map((f) => [f.check, f.fixed])).toEqual([['statistics', true]]);
      expect((await doctor(store)).findings).toEqual([]);
    } finally {
      await cleanup();
    }
  }),
);

onPostgres('doctor and tables in other schemas', () =>
  test("postgres: the application's tables in another schema (public) are not the doctor's business", async () => {
    const { store, cleanup, target, schema } = await postgresFactory.open(() => 1000);
    current = { target, schema };
    const table = `public.orders_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    try {
      await enqueueDemo(store);
      await run(store, `CREATE TABLE ${table} (id TEXT PRIMARY KEY)`);
      const report = await doctor(store);
      expect(report.healthy).toBe(true);
      expect(report.findings).toEqual([]);
    } finally {
      await run(store, `DROP TABLE IF EXISTS ${table}`);
      await cleanup();
    }
  }),
);

onPostgres('doctor connections', () =>
  test('postgres: the report holds the connections in use against max_connections; near the limit it warns', async () => {
    const { store, cleanup } = await postgresFactory.open(() => 1000);
    try {
      const report = await doctor(store);
      expect(report.checks).toContain('connections');
      const count = report.connections;
      if (count === undefined) throw new Error('no connections in the report');
      const server = new SQL(process.env.DATABASE_URL as string);
      try {
        const [settings] = await server`SELECT current_setting('max_connections')::int AS max,
          current_setting('superuser_reserved_connections')::int AS reserved`;
        expect(count.max).toBe(settings.max);
        expect(count.reserved).toBe(settings.reserved);
      } finally {
        await server.close();
      }
      // At least the doctor's own connection, never more than the server allows.
      expect(count.inUse).toBeGreaterThanOrEqual(1);
      expect(count.inUse).toBeLessThanOrEqual(count.max);
      expect(checkConnections({ inUse: 70, max: 100, reserved: 3 })).toEqual([]);
      const near = checkConnections({ inUse: 80, max: 100, reserved: 3 });
      expect(near.map((f) => [f.check, f.severity])).toEqual([['connections', 'warning']]);
      expect(near[0]?.message).toContain('80 of 100 connections in use (97 for roles');
    } finally {
      await cleanup();
    }
  }),
);

test('sqlite: the report has no connections', async () => {
  const { store, cleanup } = await sqliteFactory.open(() => 1000);
  try {
    const report = await doctor(store);
    expect(report.connections).toBeUndefined();
    expect(report.checks).not.toContain('connections');
  } finally {
    await cleanup();
  }
});
