/**
 * PostgreSQL's disk runs full under onceq: the store's `messages` table lives in a
 * tablespace on a real 1 MiB tmpfs, and enqueue fills it. The server refuses with
 * SQLSTATE 53100 (`disk_full`); onceq must say so in one sentence (a `StorageError`,
 * exit 1 in the CLI), not "internal error", and the refused batch must leave nothing
 * behind. Needs root (mount) and a PostgreSQL superuser (CREATE TABLESPACE): the
 * throwaway cluster of `bun run test` is both; elsewhere the test says why it skips.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore, type Store, status } from '@onceq/core';
import { StorageError } from '@onceq/core/internal';
import { SQL } from 'bun';
import { onPostgres } from '../support/backends.ts';
import { batch, eventId, line } from '../support/factories.ts';

const DATABASE_URL = process.env.DATABASE_URL;
const canMount = process.getuid?.() === 0;
if (!canMount) console.warn('postgres-storage.test.ts: skipped: mounting a tmpfs needs root');

onPostgres('a full disk', () =>
  describe.skipIf(!canMount)('PostgreSQL on a full disk (a tablespace on a real tmpfs)', () => {
    const suffix = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
    const schema = `t_full_${suffix}`;
    const tablespace = `onceq_full_${suffix}`;
    let admin: SQL;
    let mount: string;
    let store: Store;

    beforeAll(async () => {
      admin = new SQL(DATABASE_URL as string);
      const [{ data_directory: dataDir }] = await admin.unsafe('SHOW data_directory');
      const owner = statSync(dataDir as string);
      mount = mkdtempSync(join(tmpdir(), 'onceq-pg-full-'));
      const mounted = Bun.spawnSync([
        'mount',
        '-t',
        'tmpfs',
        '-o',
        `size=1024k,uid=${owner.uid},gid=${owner.gid},mode=0700`,
        'tmpfs',
        mount,
      ]);
      if (mounted.exitCode !== 0) throw new Error(`mount failed: ${mounted.stderr.toString()}`);
      await admin.unsafe(`CREATE TABLESPACE ${tablespace} LOCATION '${mount}'`);
      store = await openStore(DATABASE_URL as string, { schema });
      await admin.unsafe(`ALTER TABLE ${schema}.messages SET TABLESPACE ${tablespace}`);
    });

    afterAll(async () => {
      await store?.close();
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.unsafe(`DROP TABLESPACE IF EXISTS ${tablespace}`);
      await admin.close();
      Bun.spawnSync(['umount', mount]);
      rmSync(mount, { recursive: true, force: true });
    });

    test('enqueue until the disk is full: one StorageError sentence naming PostgreSQL, the refused batch leaves nothing', async () => {
      const note = 'x'.repeat(900);
      let refused: unknown = null;
      let accepted = 0;
      for (let b = 0; b < 10 && refused === null; b++) {
        const lines = Array.from({ length: 500 }, (_, i) =>
          line(eventId(b * 500 + i), { category: 'book', amount_cents: 1, note }),
        );
        try {
          accepted += (await enqueue(store, batch(...lines))).accepted;
        } catch (error) {
          refused = error;
        }
      }
      expect(refused).toBeInstanceOf(StorageError);
      const error = refused as StorageError;
      expect(error.fault).toBe('disk_full');
      expect(error.exitCode).toBe(1);
      expect(error.message).toMatch(
        /^the disk holding PostgreSQL at \S+ is full; nothing was written$/,
      );
      // The batch that hit the full disk was rolled back whole: only earlier batches count.
      const report = await status(store);
      expect(report.messages.ready).toBe(accepted);
      expect(accepted % 500).toBe(0);
    });
  }),
);
