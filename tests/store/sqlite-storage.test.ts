/**
 * SQLite's own "database or disk is full" (SQLITE_FULL), for real: the store's connection
 * is capped with `PRAGMA max_page_count`, so the file cannot grow past its current size.
 * The enqueue that needs more pages fails with a typed StorageError (one sentence with the
 * path, exit code 1) and writes nothing; with room again the same batch goes in.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test';
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
