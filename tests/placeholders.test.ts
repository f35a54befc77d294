/**
 * The SQLite statement rewrite of backend/placeholders.ts: constants become literals, every
 * slot is bound once, and anything it cannot read safely is left exactly as compiled.
 */
import { Database } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore } from '@onceq/core';
import { numberPlaceholders, type Source } from '../packages/core/src/driver/placeholders.ts';
import { rawDb } from './support/raw-db.ts';

const now: Source = { slot: 'now', index: null };
const id = (i: number): Source => ({ slot: 'ids', index: i });

describe('numberPlaceholders', () => {
  test('inlines number and null constants and binds each slot once', () => {
    const sql = 'insert into t (a, b, c, d, e) values (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)';
    const sources: Source[] = [id(0), { constant: 0 }, { constant: null }, now, now];
    sources.push(id(1), { constant: 0 }, { constant: null }, now, now);
    const out = numberPlaceholders(sql, sources);
    expect(out?.sql).toBe(
      'insert into t (a, b, c, d, e) values (?1, 0, NULL, ?2, ?2), (?3, 0, NULL, ?2, ?2)',
    );
    expect(out?.sources).toEqual([id(0), now, id(1)]);
  });

  test('keeps strings, fractions and unsafe integers as bound values, each its own', () => {
    const sql = 'select ?, ?, ?, ?';
    const sources: Source[] = [
      { constant: 'x' },
      { constant: 'x' },
      { constant: 0.5 },
      { constant: 2 ** 60 },
    ];
    const out = numberPlaceholders(sql, sources);
    expect(out?.sql).toBe('select ?1, ?2, ?3, ?4');
    expect(out?.sources).toEqual(sources);
  });

  test('a question mark inside quotes, identifiers or comments is not a placeholder', () => {
    const sql = `select '?''?', "a?", [b?], ? -- ?\n, /* ? */ ?`;
    const out = numberPlaceholders(sql, [now, { constant: 7 }]);
    expect(out?.sql).toBe(`select '?''?', "a?", [b?], ?1 -- ?\n, /* ? */ 7`);
  });

  test('leaves PostgreSQL, numbered or named SQL and a count mismatch untouched', () => {
    expect(numberPlaceholders('select $1::text[]', [now])).toBeNull();
    expect(numberPlaceholders('select ?1, ?', [now, now])).toBeNull();
    expect(numberPlaceholders('select :now', [now])).toBeNull();
    expect(numberPlaceholders('select ?, ?', [now])).toBeNull();
  });

  test('the rewritten statement writes the same row on a real SQLite file', () => {
    const sql = 'insert into t (id, n, z, at1, at2) values (?, ?, ?, ?, ?)';
    const sources: Source[] = [id(0), { constant: 0 }, { constant: null }, now, now];
    const out = numberPlaceholders(sql, sources);
    if (out === null) throw new Error('expected a rewrite');
    const db = new Database(':memory:');
    db.run('create table t (id text, n integer, z integer, at1 integer, at2 integer) strict');
    const values: Record<string, unknown> = { ids: ['E0001'], now: 1_700_000_000 };
    const bound = out.sources.map((s) =>
      'slot' in s
        ? s.index === null
          ? values[s.slot]
          : (values[s.slot] as unknown[])[s.index]
        : s.constant,
    );
    db.prepare(out.sql).run(...(bound as never[]));
    expect(db.query('select * from t').all()).toEqual([
      { id: 'E0001', n: 0, z: null, at1: 1_700_000_000, at2: 1_700_000_000 },
    ]);
    db.close();
  });
});

test('a SQLite store binds an enqueue INSERT row as two values plus one shared time', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-placeholders-'));
  const seen: { sql: string; parameters: readonly unknown[] }[] = [];
  const store = await openStore(join(dir, 'q.db'), {
    onQuery: (sql, parameters) => seen.push({ sql, parameters }),
  });
  try {
    const lines = ['E0001', 'E0002', 'E0003', 'E0004'].map(
      (id) => `{"event_id":"${id}","payload":{"n":1}}`,
    );
    expect((await enqueue(store, lines.join('\n'))).accepted).toBe(4);
    const insert = seen.find((q) => q.sql.startsWith('insert into "messages"'));
    expect(insert?.sql).toContain("(?1, ?2, 'ready', 0, 0, ?3, NULL, ?3, ?3)");
    expect(insert?.parameters).toHaveLength(4 * 2 + 1);
    const rows = await rawDb(store, (db) =>
      db.selectFrom('messages').select(['event_id', 'attempts', 'lease_until']).execute(),
    );
    expect(rows).toHaveLength(4);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a full 1000-line batch is stored by two 500-row INSERTs, every payload exact, and deduplicates whole', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-placeholders-'));
  const inserts: number[] = [];
  const store = await openStore(join(dir, 'q.db'), {
    onQuery: (sql, parameters) => {
      if (sql.startsWith('insert into "messages"')) inserts.push(parameters.length);
    },
  });
  try {
    const id = (i: number) => `E${String(i).padStart(4, '0')}`;
    const lines = Array.from(
      { length: 1000 },
      (_, i) => `{"event_id":"${id(i)}","payload":{"n":${i}}}`,
    );
    expect(await enqueue(store, lines.join('\n'))).toEqual({ accepted: 1000, duplicates: 0 });
    expect(inserts).toEqual([1001, 1001]);
    const rows = await rawDb(store, (db) =>
      db.selectFrom('messages').select(['event_id', 'payload']).orderBy('event_id').execute(),
    );
    expect(rows).toEqual(lines.map((_, i) => ({ event_id: id(i), payload: `{"n":${i}}` })));
    expect(await enqueue(store, lines.join('\n'))).toEqual({ accepted: 0, duplicates: 1000 });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
