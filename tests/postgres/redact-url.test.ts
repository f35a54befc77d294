// One redaction of PostgreSQL URLs, whatever a password holds: core's redactUrl, and
// every place the CLI shows a store (--version, a failed open) through --db, ONCEQ_DB
// and the config file. The passwords are built at run time: no URL with a password is
// written in the repository.
import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { passwordsIn, scrub } from '@onceq/core/internal';
import { redactUrl } from '@onceq/core/postgres';
import { cliSandbox } from '../support/cli.ts';

/** One password per character class a password may hold, raw and percent-encoded. */
const MIDDLES = [
  "'",
  '"',
  ' ',
  '/',
  '#',
  '?',
  '@',
  ':',
  '%',
  '%40',
  '%2F',
  'ü€',
  'пароль',
  '\u{1F511}',
  'a\'b"c d/e#f?g@h:i%j',
];
const secret = (middle: string) => `S3cr${middle}etZ`;
const url = (middle: string, tail = '@127.0.0.1:1/db') =>
  ['postgres://user:', secret(middle), tail].join('');

function expectNoSecret(text: string, middle: string): void {
  expect({ middle, leaked: text.includes('S3cr') || text.includes('etZ') }).toEqual({
    middle,
    leaked: false,
  });
}

describe('redactUrl', () => {
  test('hides a password of every character class, and keeps host, port and database', () => {
    for (const middle of MIDDLES) {
      const shown = redactUrl(url(middle));
      expect({ middle, shown }).toEqual({ middle, shown: 'postgres://user:***@127.0.0.1:1/db' });
    }
  });

  test('hides a password parameter of every character class, and the user info with it', () => {
    for (const middle of MIDDLES.filter((m) => !/[&#@]/.test(m))) {
      const text = ['postgresql://u@db/x?sslmode=require&password=', secret(middle)].join('');
      expectNoSecret(redactUrl(text), middle);
    }
  });

  test('scrub removes every spelling of the password from a driver message', () => {
    for (const middle of MIDDLES) {
      const u = url(middle);
      expect(passwordsIn(u)).toContain(secret(middle));
      expectNoSecret(scrub(`password authentication failed for ${secret(middle)}`, u), middle);
    }
  });

  test('a URL without a password is shown whole', () => {
    expect(redactUrl('postgres://onceq@db:5433/x?sslmode=require')).toBe(
      'postgres://onceq@db:5433/x?sslmode=require',
    );
    expect(redactUrl('postgres://db/x')).toBe('postgres://db/x');
    expect(redactUrl('not a url')).toBe('***');
  });
});

describe('the CLI never prints a password', () => {
  test('--version and a failed open, through --db, ONCEQ_DB and the config file', async () => {
    const box = cliSandbox();
    try {
      // Every class through --version --db; the password holding all of them through
      // every way of naming a store and every command that shows one.
      for (const middle of MIDDLES) {
        const r = await box.run(['--db', url(middle), '--version']);
        expectNoSecret(r.stdout + r.stderr, middle);
        // A server that refuses (or a URL that cannot be one) is an error, never the password.
        expect(r.code).not.toBe(0);
        expect(r.stderr).toStartWith('onceq: ');
      }
      const middle = MIDDLES.at(-1) as string;
      const target = url(middle);
      const ways: [string, string[], Record<string, string>][] = [
        ['--db', ['--db', target], {}],
        ['ONCEQ_DB', [], { ONCEQ_DB: target }],
        ['config', [], {}],
      ];
      for (const [way, flags, env] of ways) {
        writeFileSync(
          join(box.cwd, 'onceq.config.json'),
          way === 'config' ? JSON.stringify({ db: target }) : '{}',
        );
        for (const args of [
          ['--version'],
          ['--version', '--json'],
          ['status'],
          ['dlq', '--json'],
        ]) {
          const r = await box.run([...flags, ...args], { env });
          expectNoSecret(r.stdout + r.stderr, `${way}: ${args.join(' ')}`);
        }
      }
    } finally {
      box.cleanup();
    }
  }, 120_000);
});
