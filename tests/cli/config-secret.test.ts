/**
 * Through the real process: `onceq setup` given a PostgreSQL URL with a
 * password writes `onceq.config.json` readable by its owner only (0600), and prints the
 * password nowhere. The throwaway cluster trusts local connections, so the password is
 * accepted without being checked.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describePostgres } from '../support/backends.ts';
import { cliSandbox } from '../support/cli.ts';
import { scratchDatabase } from '../support/pg-database.ts';

const pg = scratchDatabase('secret');

describePostgres('setup with a password in the URL', () => {
  beforeAll(() => pg.create());
  afterAll(() => pg.drop());

  test('the config is written 0600 and the password is printed nowhere', async () => {
    const box = cliSandbox();
    try {
      const url = new URL(pg.url);
      url.password = 'hunter2-secret';
      const r = await box.run(['setup', '--yes', '--no-run', '--db', url.toString()]);
      expect(r.code).toBe(0);
      const path = join(box.cwd, 'onceq.config.json');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(path, 'utf8')).db).toBe(url.toString());
      expect(`${r.stdout}${r.stderr}`).not.toContain('hunter2-secret');
      // The same setup without a password writes an ordinary 0644 file.
      const plain = cliSandbox();
      try {
        const r2 = await plain.run(['setup', '--yes', '--no-run', '--db', 'store.db']);
        expect(r2.code).toBe(0);
        expect(statSync(join(plain.cwd, 'onceq.config.json')).mode & 0o777).toBe(0o644);
      } finally {
        plain.cleanup();
      }
    } finally {
      await pg.reset();
      box.cleanup();
    }
  });
});
