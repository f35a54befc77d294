/**
 * The real `onceq` process on bad surroundings: a malformed PostgreSQL URL, an endless
 * stdin, a store on a full or read-only disk. Each ends with one `onceq:` sentence and
 * the right exit code, never a stack, never a password.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachBackend } from '../support/backends.ts';
import { BIN, type CliResult, type CliSandbox, cliSandbox } from '../support/cli.ts';
import { batch, eventId, line, paid } from '../support/factories.ts';
import { scratchDatabase } from '../support/pg-database.ts';

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
      try {
        await proc.stdin.end();
      } catch {
        // Already closed by the other side.
      }
      const [code, stderr] = await Promise.all([exit, new Response(proc.stderr).text()]);
      expect(code).toBe(3);
      expect(stoppedEarly).toBe(true);
      expect(stderr).toBe(
        'onceq: batch rejected, nothing was written (1 problem):\n  stdin holds more than 1,000,000 bytes, the limit is 1,000,000\n  hint: a batch holds at most 1,000 lines and 1,000,000 bytes; enqueue a larger file with onceq enqueue --split FILE, or cut it with split -l 1000 FILE part-\n',
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
      expect(over.stderr).toContain('stdin holds more than 1,000,000 bytes');
    } finally {
      box.cleanup();
    }
  });
});

/** Mounts a fresh tmpfs of `kib` KiB at a new directory; null when this machine cannot. */
function mountTmpfs(kib: number): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-mnt-'));
  const r = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${kib}k`, 'tmpfs', dir]);
  if (r.exitCode === 0) return dir;
  rmSync(dir, { recursive: true, force: true });
  return null;
}

function unmount(dir: string): void {
  Bun.spawnSync(['umount', dir]);
  rmSync(dir, { recursive: true, force: true });
}

const probe = mountTmpfs(64);
if (probe !== null) unmount(probe);
else console.warn('cli-faults.test.ts: cannot mount a tmpfs here (needs root): disk tests skipped');
const withMounts = probe !== null ? describe : describe.skip;

withMounts('SQLite on a full disk and on a read-only file system (real tmpfs mounts)', () => {
  const five = batch(...[1, 2, 3, 4, 5].map((i) => line(eventId(i), paid('book', i))));
  const big = batch(
    ...Array.from({ length: 400 }, (_, i) =>
      line(eventId(100 + i), { category: 'book', amount_cents: 1, note: 'x'.repeat(900) }),
    ),
  );
  let mount: string;
  let box: CliSandbox;
  beforeEach(() => {
    mount = mountTmpfs(256) as string;
    box = cliSandbox();
    writeFileSync(join(box.cwd, 'five.jsonl'), five);
    writeFileSync(join(box.cwd, 'big.jsonl'), big);
  });
  afterEach(() => {
    unmount(mount);
    box.cleanup();
  });
  const db = () => join(mount, 'onceq.db');
  const statusOf = async () =>
    JSON.parse((await box.run(['status', '--json', '--db', db()])).stdout) as {
      messages: Record<string, number>;
    };

  test('a full disk: exit 1 and one sentence naming the cause and the path; the store is intact once space is back', async () => {
    expect((await box.run(['enqueue', 'five.jsonl', '--db', db(), '--now', '1000'])).code).toBe(0);
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(mount, 'filler')}`, 'bs=4k']); // ends at ENOSPC
    const r = await box.run(['enqueue', 'big.jsonl', '--db', db(), '--now', '1001']);
    expect(expectOneSentence(r, 1)).toBe(
      `onceq: the disk holding ${db()} is full; nothing was written\n`,
    );
    rmSync(join(mount, 'filler'));
    expect((await statusOf()).messages).toEqual({ ready: 5, leased: 0, done: 0, dead: 0 });
  });

  test('a read-only file system: exit 2 and one sentence naming the cause and the path; nothing changed', async () => {
    expect((await box.run(['enqueue', 'five.jsonl', '--db', db(), '--now', '1000'])).code).toBe(0);
    expect(Bun.spawnSync(['mount', '-o', 'remount,ro', mount]).exitCode).toBe(0);
    for (const args of [['enqueue', 'big.jsonl'], ['work']]) {
      const r = await box.run([...args, '--db', db(), '--now', '1001']);
      // The store path is checked before anything is opened for writing (a usage error).
      expect(expectOneSentence(r, 2)).toBe(
        `onceq: cannot use the store ${db()}: the file system of ${db()} is read-only\n`,
      );
    }
    expect(Bun.spawnSync(['mount', '-o', 'remount,rw', mount]).exitCode).toBe(0);
    expect((await statusOf()).messages).toEqual({ ready: 5, leased: 0, done: 0, dead: 0 });
  });
});

/** A running `onceq` whose stdin we keep, and whose stderr we can wait on. */
function startOnceq(args: string[], cwd: string) {
  const proc = Bun.spawn(['bun', BIN, ...args], {
    cwd,
    env: { ...process.env, ONCEQ_DB: undefined, CI: undefined, ONCEQ_DEBUG: undefined },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const stdout = new Response(proc.stdout).text();
  let stderrSoFar = '';
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  const stderrDone = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return stderrSoFar;
      stderrSoFar += decoder.decode(value, { stream: true });
    }
  })();
  return {
    proc,
    /** Resolves once stderr contains `text`; fails if the process exits first (or after 60 s). */
    async untilStderr(text: string): Promise<void> {
      for (let i = 0; i < 1200; i++) {
        if (stderrSoFar.includes(text)) return;
        if (proc.exitCode !== null) break;
        await Bun.sleep(50);
      }
      throw new Error(`never saw ${JSON.stringify(text)} on stderr; got ${stderrSoFar}`);
    },
    async finish() {
      const code = await proc.exited;
      return { code, stdout: await stdout, stderr: await stderrDone };
    },
  };
}

const holdDb = scratchDatabase('hold');
forEachBackend('claim --hold really holds', ({ name: backend }) => {
  describe(`${backend}: claim --hold really holds`, () => {
    if (backend === 'postgres') {
      beforeAll(() => holdDb.create());
      afterAll(() => holdDb.drop());
    }
    test('the claim stays uncommitted until Enter: a reader sees it ready, a second claimer skips it (PostgreSQL) or waits (SQLite)', async () => {
      const box = cliSandbox();
      const db = backend === 'postgres' ? ['--db', holdDb.url] : [];
      try {
        writeFileSync(
          join(box.cwd, 'two.jsonl'),
          batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 200))),
        );
        expect((await box.run(['enqueue', 'two.jsonl', '--now', '1000', ...db])).code).toBe(0);
        const holder = startOnceq(['claim', '--hold', '--json', '--now', '1000', ...db], box.cwd);
        await holder.untilStderr('holding the claim transaction open, not committed yet');

        // While it holds: nothing of the claim is visible to anyone else.
        const during = await box.run(['status', '--json', ...db]);
        expect(JSON.parse(during.stdout).messages).toMatchObject({ ready: 2, leased: 0 });

        const second = startOnceq(['claim', '--json', '--now', '1000', ...db], box.cwd);
        if (backend === 'postgres') {
          // SKIP LOCKED: the second claimer takes E0002 and finishes while E0001 is held.
          const r = await second.finish();
          expect([r.code, JSON.parse(r.stdout).event_id]).toEqual([0, 'E0002']);
          expect(holder.proc.exitCode).toBeNull();
        }
        holder.proc.stdin.write('\n');
        await holder.proc.stdin.flush();
        const held = await holder.finish();
        expect([held.code, JSON.parse(held.stdout).event_id]).toEqual([0, 'E0001']);
        if (backend === 'sqlite') {
          // Started during the hold, the second claimer (which needs the one write lock)
          // ends with what the committed claim left.
          const r = await second.finish();
          expect([r.code, JSON.parse(r.stdout).event_id, r.stderr]).toEqual([0, 'E0002', '']);
        }
        const after = await box.run(['status', '--json', ...db]);
        expect(JSON.parse(after.stdout).messages).toMatchObject({ ready: 0, leased: 2 });
      } finally {
        box.cleanup();
        if (backend === 'postgres') await holdDb.reset();
      }
    });
  });
});
