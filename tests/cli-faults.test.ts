/**
 * The real `onceq` process on bad surroundings: a malformed PostgreSQL URL, an endless
 * stdin, a store on a full or read-only disk. Each ends with one `onceq:` sentence and
 * the right exit code, never a stack, never a password.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type CliResult, type CliSandbox, cliSandbox } from './support/cli.ts';

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

describe('enqueue - refuses stdin past 1,000,000 bytes while reading it', () => {
  test('an endless stdin: exit 3 with the usual sentence while the writer is still writing (it stopped reading)', async () => {
    const box = cliSandbox();
    try {
      const proc = Bun.spawn(['bun', BIN, 'enqueue', '-', '--db', join(box.cwd, 'onceq.db')], {
        cwd: box.cwd,
        env: { ...process.env, ONCEQ_DB: undefined, CI: undefined },
        stdin: 'pipe',
        stdout: 'pipe',
        stderr: 'pipe',
      });
      let exited = false;
      const exit = proc.exited.then((code) => {
        exited = true;
        return code;
      });
      // Write until the process exits, at most 64 MB: a reader that buffers all of
      // stdin before checking its size can only answer after we stop.
      const chunk = new Uint8Array(64 * 1024).fill(0x61);
      let written = 0;
      const CAP = 64 * 1024 * 1024;
      try {
        while (!exited && written < CAP) {
          proc.stdin.write(chunk);
          await proc.stdin.flush();
          written += chunk.byteLength;
        }
      } catch {
        // EPIPE: the process closed its stdin, as it should.
      }
      const stoppedEarly = written < CAP;
      await proc.stdin.end()?.catch?.(() => {});
      const [code, stderr] = await Promise.all([exit, new Response(proc.stderr).text()]);
      expect(code).toBe(3);
      expect(stoppedEarly).toBe(true);
      expect(stderr).toBe(
        'onceq: batch rejected, nothing was written (1 problem):\n  stdin holds more than 1000000 bytes, the limit is 1000000\n',
      );
      expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
    } finally {
      box.cleanup();
    }
  });

  test('exactly 1,000,000 bytes on stdin are read whole and judged by the batch rules', async () => {
    const box = cliSandbox();
    try {
      const line = '{"event_id":"E0001","payload":{"category":"book","amount_cents":100}}\n';
      const pad = ' '.repeat(1_000_000 - line.length - 1);
      const r = await box.run(['enqueue', '-', '--now', '1000'], { stdin: `${line}${pad}\n` });
      expect([r.code, r.stdout.trim()]).toEqual([0, 'accepted 1, duplicates 0']);
      const over = await box.run(['enqueue', '-', '--now', '1000'], { stdin: `${line}${pad} \n` });
      expect(over.code).toBe(3);
      expect(over.stderr).toContain('stdin holds more than 1000000 bytes');
    } finally {
      box.cleanup();
    }
  });
});
