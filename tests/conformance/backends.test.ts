// The skip-or-require-PostgreSQL rule of tests/support/backends.ts, shown on a real
// `bun test` child process running a suite declared with forEachBackend: where
// PostgreSQL is required and no server answers, the run fails; it never vanishes.
import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { postgresPlan, postgresRequired } from '../support/backends.ts';
import { runProcess } from '../support/spawn.ts';

const FIXTURE = join(import.meta.dir, '..', 'support', 'fixtures', 'backend-rule.ts');
/** A port nothing listens on: connecting is refused at once. */
const UNREACHABLE = 'postgres://onceq@127.0.0.1:1/onceq_test';

function runFixture(env: Record<string, string>) {
  const base: Record<string, string | undefined> = { ...process.env };
  delete base.DATABASE_URL;
  delete base.CI;
  delete base.ONCEQ_REQUIRE_POSTGRES;
  return runProcess(['bun', 'test', '--timeout', '60000', FIXTURE], {
    env: { ...base, ...env },
  });
}

describe('the PostgreSQL rule', () => {
  test('required: CI set, or ONCEQ_REQUIRE_POSTGRES=1; nothing else', () => {
    expect(postgresRequired({})).toBe(false);
    expect(postgresRequired({ ONCEQ_REQUIRE_POSTGRES: '0' })).toBe(false);
    expect(postgresRequired({ CI: 'true' })).toBe(true);
    expect(postgresRequired({ ONCEQ_REQUIRE_POSTGRES: '1' })).toBe(true);
  });

  test('DATABASE_URL set: PostgreSQL runs, required or not', () => {
    expect(postgresPlan({ DATABASE_URL: UNREACHABLE })).toEqual({ run: true, url: UNREACHABLE });
    expect(postgresPlan({ DATABASE_URL: UNREACHABLE, CI: '1' })).toEqual({
      run: true,
      url: UNREACHABLE,
    });
    expect(postgresPlan({ DATABASE_URL: '' })).toMatchObject({ run: false, required: false });
  });

  test('under CI without DATABASE_URL the suite fails, naming the reason', async () => {
    const result = await runFixture({ CI: 'true' });
    const output = result.stdout + result.stderr;
    expect(result.code).toBe(1);
    expect(output).toContain('(fail) postgres: a store opens');
    expect(output).toContain('PostgreSQL is required here');
    expect(output).toContain(' 1 pass');
  });

  test('with ONCEQ_REQUIRE_POSTGRES=1 and a server that does not answer, the suite fails', async () => {
    const result = await runFixture({ ONCEQ_REQUIRE_POSTGRES: '1', DATABASE_URL: UNREACHABLE });
    const output = result.stdout + result.stderr;
    expect(result.code).toBe(1);
    expect(output).toContain('(fail) postgres: a store opens');
    expect(output).not.toContain('skip');
  });

  test('not required and no DATABASE_URL: the PostgreSQL half is skipped, visibly', async () => {
    const result = await runFixture({});
    const output = result.stdout + result.stderr;
    expect(result.code).toBe(0);
    expect(output).toContain(' 1 pass');
    expect(output).toContain(' 1 skip');
    expect(output).toContain('postgres: a store opens: skipped, DATABASE_URL is not set');
  });
});
