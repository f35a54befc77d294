/**
 * How onceq's hand-written statements bind (driver/sql-text.ts): each distinct value
 * once, constants as literals, one statement name for one text, and the enqueue
 * INSERT's values in the places its text names.
 */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore, work } from '@onceq/core';
import { blockedKeys } from '@onceq/core/admin';
import {
  type Executor,
  insertMessages,
  postgresDialect,
  postgresDriver,
  redriveStatement as redrive,
  type SqlDialect,
  type SqlText,
  sqliteDialect,
} from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { rawDb } from '../support/raw-db.ts';

/** An executor that runs nothing and records what it was given. */
function recording(dialect: SqlDialect) {
  const seen: { statement: SqlText; parameters: readonly unknown[] }[] = [];
  const x = {
    dialect,
    query: async (statement: SqlText | string, parameters: readonly unknown[] = []) => {
      if (typeof statement === 'string') throw new Error('expected a named statement');
      seen.push({ statement, parameters });
      return { rows: [], changes: 0 };
    },
    savepoint: (fn: () => Promise<unknown>) => fn(),
    completionTx: () => {
      throw new Error('not here');
    },
  } as unknown as Executor;
  return { x, seen };
}

/** The placeholder numbers a text uses, each once, sorted. */
function placeholders(sql: string): number[] {
  const numbers = [...sql.matchAll(/[?$](\d+)/g)].map((m) => Number(m[1]));
  return [...new Set(numbers)].sort((a, b) => a - b);
}

/** The enqueue INSERTs among the statements `seen`. */
const inserts = <T extends { statement: SqlText }>(seen: T[]) =>
  seen.filter((s) => s.statement.name.startsWith('onceq/enqueue-insert/'));

const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ eventId: `E${i}`, payload: `{"n":${i}}` }));

describe('the enqueue INSERT on SQLite', () => {
  const dialect = sqliteDialect;
  test('binds each row as two values plus the shared time, availability and queue, every state a literal', async () => {
    const { x, seen } = recording(dialect);
    await insertMessages(x, rows(4), 1000);
    // Before the insert, the last rowid (its rows' payloads are counted from there).
    expect(seen.map((s) => s.statement.name.split('/')[1])).toEqual([
      'enqueue-last-rowid',
      'enqueue-insert',
    ]);
    const [{ statement, parameters }] = inserts(seen) as [(typeof seen)[number]];
    expect(placeholders(statement.sql)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(statement.sql).toContain("(?3, ?4, 'ready', 0, 0, ?2, NULL, ?1, ?1, ?11)");
    // The values sit where the text names them: now and the time the rows become
    // claimable (now: no delay), then id and payload per row, then the rows' queue.
    expect(parameters).toEqual([
      1000,
      1000,
      'E0',
      '{"n":0}',
      'E1',
      '{"n":1}',
      'E2',
      '{"n":2}',
      'E3',
      '{"n":3}',
      'default',
    ]);
  });

  test('a 1000-row batch is two 500-row statements of 1003 values, one text', async () => {
    const { x, seen } = recording(dialect);
    await insertMessages(x, rows(1000), 1000);
    const texts = inserts(seen);
    expect(texts.map((s) => s.parameters.length)).toEqual([1003, 1003]);
    expect(texts[0]?.statement).toBe(texts[1]?.statement as SqlText);
  });
});

describe('the enqueue INSERT on PostgreSQL', () => {
  test('is one text for any number of rows: the clock, one array per column and the queue', async () => {
    const { x, seen } = recording(postgresDialect('onceq', false));
    await postgresDriver.insertMessages(x, rows(3), 1000);
    await postgresDriver.insertMessages(x, rows(1000), 1000);
    expect(seen).toHaveLength(2);
    expect(seen[0]?.statement).toBe(seen[1]?.statement as SqlText);
    const [first] = seen as [(typeof seen)[number]];
    expect(placeholders(first.statement.sql)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(first.statement.sql).toContain('onceq.messages');
    // NULL: the server's clock; then the ids and payloads in row order; no ordering keys
    // (empty arrays, padded with NULLs by unnest); no delay; the queue.
    expect(first.parameters).toEqual([
      null,
      ['E0', 'E1', 'E2'],
      ['{"n":0}', '{"n":1}', '{"n":2}'],
      [],
      [],
      [],
      0,
      0,
      'default',
    ]);
  });
});

describe('statement names', () => {
  test('one name means one text: another arity or another schema is another name', async () => {
    const named = async (dialect: SqlDialect, ids: string[]) => {
      const { x, seen } = recording(dialect);
      await redrive(x, ids, 1000);
      return seen[0]?.statement as SqlText;
    };
    const one = await named(postgresDialect('a', false), ['E1']);
    const two = await named(postgresDialect('a', false), ['E1', 'E2']);
    const otherSchema = await named(postgresDialect('b', false), ['E1']);
    const modelClock = await named(postgresDialect('a', true), ['E9']);
    expect(one.name).toMatch(/^onceq\/redrive\/1\/[0-9a-z]+$/);
    expect(two.name).toMatch(/^onceq\/redrive\/2\//);
    expect(otherSchema.sql).not.toBe(one.sql);
    expect(otherSchema.name).not.toBe(one.name);
    expect(otherSchema.sql).toContain('b.messages');
    // The clock is a bound value, not part of the text: the same statement.
    expect(modelClock).toBe(one);
    // PostgreSQL cuts a prepared statement's name at 63 bytes.
    expect(Buffer.byteLength(two.name)).toBeLessThanOrEqual(63);
  });

  test('the server clock is read by the statement unless a model clock is bound', () => {
    expect(postgresDialect('onceq', false).nowValue(1234)).toBeNull();
    expect(postgresDialect('onceq', true).nowValue(1234)).toBe(1234);
    expect(postgresDialect('onceq', false).now(1)).toBe(
      'COALESCE($1::bigint, floor(extract(epoch FROM statement_timestamp()))::bigint)',
    );
    expect(sqliteDialect.nowValue(1234)).toBe(1234);
  });
});

test('a SQLite store stores a full 1000-line batch with two INSERTs, every payload exact, and deduplicates whole', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-statements-'));
  const inserts: number[] = [];
  const store = await openStore(join(dir, 'q.db'), {
    onQuery: (sql, parameters) => {
      if (sql.startsWith('INSERT INTO messages\n')) inserts.push(parameters.length);
    },
  });
  try {
    const id = (i: number) => `E${String(i).padStart(4, '0')}`;
    const lines = Array.from(
      { length: 1000 },
      (_, i) => `{"event_id":"${id(i)}","payload":{"n":${i}}}`,
    );
    expect(await enqueue(store, lines.join('\n'))).toEqual({ accepted: 1000, duplicates: 0 });
    expect(inserts).toEqual([1003, 1003]);
    const stored = await rawDb(store, (db) =>
      db
        .selectFrom('messages')
        .select(['event_id', 'payload', 'state', 'attempts', 'lease_until'])
        .orderBy('event_id')
        .execute(),
    );
    expect(stored).toEqual(
      lines.map((_, i) => ({
        event_id: id(i),
        payload: `{"n":${i}}`,
        state: 'ready',
        attempts: 0,
        lease_until: null,
      })),
    );
    expect(await enqueue(store, lines.join('\n'))).toEqual({ accepted: 0, duplicates: 1000 });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A `LIMIT` whose value is a bare placeholder: SQLite prepares such a text again at every run. */
const BARE_LIMIT = /\bLIMIT\s+[?$]\d+/i;

describe('a LIMIT bound on SQLite', () => {
  test('the pattern finds a bare bound LIMIT and passes one read through the dialect', () => {
    expect(BARE_LIMIT.test('SELECT 1 FROM t ORDER BY a LIMIT ?3')).toBe(true);
    expect(BARE_LIMIT.test('SELECT 1 FROM t LIMIT $1 FOR UPDATE')).toBe(true);
    expect(BARE_LIMIT.test(`SELECT 1 FROM t LIMIT ${sqliteDialect.limit(3)}`)).toBe(false);
    expect(BARE_LIMIT.test('SELECT 1 FROM t LIMIT 500')).toBe(false);
  });

  test('no statement the store runs to claim, ACK and list blocked keys binds a bare LIMIT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-limit-'));
    const texts = new Set<string>();
    const store = await openStore(join(dir, 'onceq.db'), { onQuery: (sql) => texts.add(sql) });
    try {
      const lines = Array.from(
        { length: 6 },
        (_, i) =>
          `{"event_id":"E000${i}","payload":{"category":"book","amount_cents":${i + 1},"k":"a"}}`,
      );
      await enqueue(store, lines.join('\n'), { keyField: 'k' });
      expect((await work(store, handlers.v1, { batch: 2 })).done).toBe(6);
      await blockedKeys(store, { limit: 10 });
      const limited = [...texts].filter((sql) => /\bLIMIT\b/i.test(sql));
      expect(limited.some((sql) => sql.includes(sqliteDialect.limit(3)))).toBe(true);
      expect(limited.filter((sql) => BARE_LIMIT.test(sql))).toEqual([]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('no text written for SQLite, or for both backends, names a bare placeholder as its LIMIT', async () => {
    const driver = join(import.meta.dir, '../../packages/core/src/driver');
    const found: string[] = [];
    for await (const file of new Bun.Glob('**/*.ts').scan(driver)) {
      if (file.startsWith('postgres/')) continue;
      const text = await Bun.file(join(driver, file)).text();
      for (const m of text.matchAll(/\bLIMIT\s+(\?\d+|\$\{d\.param\()/g))
        found.push(`${file}: ${m[0]}`);
    }
    expect(found).toEqual([]);
  });
});
