/**
 * The SQLite file's own limits, for real:
 * - "database or disk is full" (SQLITE_FULL): the store's connection is capped with
 *   `PRAGMA max_page_count`, so the file cannot grow past its current size. The enqueue
 *   that needs more pages fails with a typed StorageError (one sentence with the path,
 *   exit code 1) and writes nothing; with room again the same batch goes in.
 * - the `-wal` file: grown far past a checkpoint's worth while a reader holds it back, it
 *   is cut back when the store's next write restarts the log.
 */
import { Database } from 'bun:sqlite';
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { statSync } from 'node:fs';
import { enqueue, status } from '@onceq/core';
import { StorageError } from '@onceq/core/internal';
import { nEvents, type OpenedStore, sqliteFactory, testClock } from '../support/factories.ts';

let opened: OpenedStore;
beforeEach(async () => {
  opened = await sqliteFactory.open(testClock());
});
afterEach(() => opened.cleanup());

test('SQLITE_FULL mid-enqueue: StorageError disk_full naming the path, nothing written, the same batch fits later', async () => {
  const { store, target } = opened;
  await enqueue(store, nEvents(3).jsonl);
  // The cap is a setting of one connection: it goes on the store's own, through its
  // executor (a connection of the test's own could not cap the store's writes).
  const pages = await store.read((x) => x.query<{ page_count: number }>('PRAGMA page_count'));
  const current = Number(pages.rows[0]?.page_count);
  await store.read((x) => x.query(`PRAGMA max_page_count = ${current}`));
  const big = nEvents(900).jsonl; // needs many more pages
  let caught: unknown;
  try {
    await enqueue(store, big);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(StorageError);
  const error = caught as StorageError;
  expect([error.code, error.exitCode]).toEqual(['disk_full', 1]);
  expect(error.message).toBe(`the disk holding ${target} is full; nothing was written`);
  expect((error.cause as { code?: string }).code).toBe('SQLITE_FULL');
  expect((await status(store)).messages.ready).toBe(3);
  await store.read((x) => x.query(`PRAGMA max_page_count = ${current * 1000}`));
  expect(await enqueue(store, big)).toEqual({ accepted: 897, duplicates: 3 });
});

test('a -wal file grown while a reader held back the checkpoint is cut back to 4 MiB when the store writes next', async () => {
  const { store, target } = opened;
  const reader = new Database(target);
  const writer = new Database(target);
  try {
    reader.run('BEGIN');
    const read = reader.prepare('SELECT count(*) FROM sqlite_master');
    read.get();
    read.finalize();
    writer.run('CREATE TABLE filler (b BLOB)');
    const insert = writer.prepare('INSERT INTO filler VALUES (randomblob(3000))');
    for (let t = 0; t < 8; t++)
      writer.transaction(() => {
        for (let i = 0; i < 500; i++) insert.run();
      })();
    insert.finalize();
    const grown = statSync(`${target}-wal`).size;
    expect(grown).toBeGreaterThan(12 * 1024 * 1024);
    reader.run('COMMIT');
    writer.run('PRAGMA wal_checkpoint(PASSIVE)');
    await enqueue(store, nEvents(3).jsonl);
    expect(statSync(`${target}-wal`).size).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect((await status(store)).messages.ready).toBe(3);
  } finally {
    reader.close();
    writer.close();
  }
});
