/**
 * The real `onceq` process on bad surroundings: a malformed PostgreSQL URL, an endless
 * stdin, a store on a full or read-only disk. Each ends with one `onceq:` sentence and
 * the right exit code, never a stack, never a password.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type CliResult, type CliSandbox, cliSandbox } from './support/cli.ts';

function expectOneSentence(result: CliResult, code: number): string {
  expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code });
  expect(result.stderr).toStartWith('onceq: ');
  expect(result.stderr).not.toMatch(/^\s+at .+[:(]/m);
  return result.stderr;
}

describe('a malformed --db postgres://… URL is a usage error (exit 2)', () => {
  let box: CliSandbox;
  beforeAll(() => {
    box = cliSandbox();
  });
  afterAll(() => box.cleanup());

  // Built at run time so the repository itself holds no URL with a password.
  const secret = ['pa55', 'word'].join('-');
  const cases: [string, string, string | null][] = [
    [
      'a port above 65535',
      `postgres://onceq:${secret}@127.0.0.1:99999/db`,
      'the port is not a number from 1 to 65535',
    ],
    [
      'a port that is not a number',
      `postgres://onceq:${secret}@127.0.0.1:port/db`,
      'the port is not a number from 1 to 65535',
    ],
    ['a space', `postgres://onceq:${secret}@local host/db`, 'it contains a space'],
    ['an unclosed IPv6 bracket', `postgres://onceq:${secret}@[::1/db`, null],
  ];
  for (const [what, url, why] of cases) {
    test(`${what}: one sentence naming the cause, an ungarbled hint, no password`, async () => {
      const stderr = expectOneSentence(await box.run(['status', '--db', url]), 2);
      expect(stderr).toContain('the PostgreSQL URL is malformed');
      if (why !== null) expect(stderr).toContain(`(${why})`);
      // The hint survives the CLI's password redaction intact.
      expect(stderr).toContain(
        'expected postgres://HOST/DATABASE, optionally with USER or USER:PASSWORD',
      );
      expect(stderr).not.toContain(secret);
      expect(stderr).not.toContain('***');
      expect(stderr.trim().split('\n')).toHaveLength(1);
    });
  }

  test('--json: the failure is one JSON document on stdout, exit 2, no password', async () => {
    const r = await box.run(['status', '--json', '--db', `postgres://onceq:${secret}@h:port/db`]);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).not.toContain(secret);
  });
});
