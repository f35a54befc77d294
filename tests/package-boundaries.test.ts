/**
 * The packages meet through their public API only: a SQLite command
 * never loads the PostgreSQL driver, and @onceq/handler reaches core only through
 * `@onceq/core`, never by a relative path into core's sources.
 */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from './support/spawn.ts';

const CHILD = join(import.meta.dir, 'support', 'child-modules.ts');

async function driverLoadedBy(mode: 'sqlite' | 'control') {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-boundaries-'));
  try {
    const args = ['bun', CHILD, join(dir, 'store.db'), ...(mode === 'control' ? ['control'] : [])];
    const run = await runProcess(args);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as { done: number; driver: string[] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('package boundaries', () => {
  test('a whole SQLite cycle through @onceq/core and @onceq/handler never loads the pg driver', async () => {
    const run = await driverLoadedBy('sqlite');
    expect(run.done).toBe(1);
    expect(run.driver).toEqual([]);
  }, 60_000);

  test('control: the same check sees the driver once the PostgreSQL backend is loaded', async () => {
    const run = await driverLoadedBy('control');
    expect(run.done).toBe(1);
    expect(run.driver.some((file) => /[\\/]pg[\\/]/.test(file))).toBe(true);
  }, 60_000);

  test('packages/handler imports core only as @onceq/core, its public root (no path into core/src, no subpath)', () => {
    const dir = join(import.meta.dir, '..', 'packages', 'handler', 'src');
    const offenders = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .filter((name) =>
        /from '(\.\.\/\.\.\/core\/|@onceq\/core\/)/.test(readFileSync(join(dir, name), 'utf8')),
      );
    expect(offenders).toEqual([]);
    // The check can fail: this line is what it looks for.
    expect(/from '\.\.\/\.\.\/core\//.test("import { x } from '../../core/src/x.ts';")).toBe(true);
    expect(/from '@onceq\/core\//.test("import { x } from '@onceq/core/internal';")).toBe(true);
  });
});
