/**
 * Space that prune frees, on SQLite: a store created by this onceq uses incremental
 * auto-vacuum, so a prune gives its free pages back to the file system step by step,
 * without an exclusive rewrite of the file; an older store keeps them for reuse until one
 * full `VACUUM` (`prune --vacuum`) switches it over.
 */
import { Database } from 'bun:sqlite';
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore, type Store, work } from '@onceq/core';
import { prune, storageUse } from '@onceq/core/admin';
import { handlers } from '@onceq/handler';
import { batch, eventId, line, testClock } from '../support/factories.ts';
import { sqliteStoreAt } from '../support/old-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceq-space-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The file's pages and free pages, read on the store's own connection. */
async function pages(store: Store): Promise<{ mode: number; total: number; free: number }> {
  const one = async (pragma: string) =>
    Number(Object.values((await store.read((x) => x.query(`PRAGMA ${pragma}`))).rows[0] ?? {})[0]);
  return {
    mode: await one('auto_vacuum'),
    total: await one('page_count'),
    free: await one('freelist_count'),
  };
}

/** 400 messages with 4 KB payloads, done 40 days ago. */
async function bigDeadMessages(store: Store, clock: ReturnType<typeof testClock>) {
  const note = 'x'.repeat(4000);
  const lines = Array.from({ length: 400 }, (_, i) =>
    line(eventId(i + 1), { amount_cents: 100, category: 'book', note }),
  );
  for (let i = 0; i < lines.length; i += 100)
    await enqueue(store, batch(...lines.slice(i, i + 100)));
  await work(store, handlers.v1);
  clock.advance(40 * 86_400);
}

test('a new store gives the pages a prune frees back to the file system, without VACUUM', async () => {
  const clock = testClock();
  const store = await openStore(join(dir, 'new.db'), { clock });
  try {
    await bigDeadMessages(store, clock);
    const before = await pages(store);
    expect(before.mode).toBe(2); // INCREMENTAL
    const result = await prune(store, { doneOlderThanSeconds: 30 * 86_400, dutyCycle: 1 });
    expect([result.done, result.vacuumed]).toEqual([400, false]);
    const after = await pages(store);
    expect(after.free).toBe(0);
    expect(result.pagesReleased).toBeGreaterThan(before.total / 2);
    expect(after.total).toBe(before.total - result.pagesReleased);
    // What status --json reports: the file's pages (4096 bytes each) plus its WAL.
    const use = await storageUse(store);
    expect([use.events, use.pruned]).toEqual([400, 400]);
    expect(use.bytes).toBeGreaterThanOrEqual(after.total * 4096);
    expect(use.bytesPerEvent).toBe(Math.round(use.bytes / 400));
  } finally {
    await store.close();
  }
});

test('an older store keeps the freed pages for reuse; one prune --vacuum switches it to giving them back', async () => {
  const path = join(dir, 'old.db');
  await sqliteStoreAt(path, '0009_deliveries', () => {});
  const clock = testClock();
  const store = await openStore(path, { clock });
  try {
    await bigDeadMessages(store, clock);
    const before = await pages(store);
    expect(before.mode).toBe(0); // NONE: set at creation, by an older release
    const result = await prune(store, { doneOlderThanSeconds: 30 * 86_400, dutyCycle: 1 });
    expect(result.pagesReleased).toBe(0);
    const after = await pages(store);
    expect(after.total).toBe(before.total);
    expect(after.free).toBeGreaterThan(before.total / 2);
  } finally {
    await store.close();
  }
  const again = await openStore(path, { clock });
  try {
    await enqueue(
      again,
      batch(line('E0999', { amount_cents: 1, category: 'pen', note: 'y'.repeat(4000) })),
    );
    clock.advance(1);
    await work(again, handlers.v1);
    clock.advance(40 * 86_400);
    expect((await prune(again, { doneOlderThanSeconds: 86_400, vacuum: true })).vacuumed).toBe(
      true,
    );
    expect((await pages(again)).mode).toBe(2);
  } finally {
    await again.close();
  }
  const raw = new Database(path, { readonly: true });
  try {
    expect(raw.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
  } finally {
    raw.close();
  }
});
