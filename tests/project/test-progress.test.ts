/**
 * `bun run test` shows progress during typecheck and lint: scripts/checks.sh (its step 1)
 * is run on a fake workspace whose `typecheck` task prints a line and then waits for a
 * file this test creates. The line must reach us while the task still waits: output
 * that turbo held back until a task ended (`--log-order=grouped`, `--output-logs=full`
 * without streaming) would only arrive after the file exists, and this test fails.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CHECKS = resolve(import.meta.dir, '..', '..', 'scripts', 'checks.sh');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'onceq-progress-'));
  const json = (path: string, value: unknown) =>
    writeFileSync(join(dir, path), JSON.stringify(value));
  mkdirSync(join(dir, 'pkgs', 'slow'), { recursive: true });
  json('package.json', {
    name: 'fake',
    private: true,
    packageManager: 'bun@1.4.4',
    workspaces: ['pkgs/*'],
  });
  json('turbo.json', { tasks: { typecheck: { cache: false }, lint: { cache: false } } });
  json('pkgs/slow/package.json', {
    name: 'slow',
    private: true,
    scripts: {
      // printf: turbo echoes each command line, and the markers must not appear in it.
      // Bounded: gives up after 60 s if the test never creates the file.
      typecheck:
        "printf 'typecheck-%s\\n' started; for i in $(seq 1200); do [ -e ../../go ] && break; sleep 0.05; done; printf 'typecheck-%s\\n' ended",
      lint: "printf 'lint-%s\\n' ran",
    },
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("scripts/checks.sh prints a task's lines while the task runs, not at the end", async () => {
  const proc = Bun.spawn(['bash', CHECKS], {
    cwd: dir,
    env: { ...process.env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let seen = '';
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  /**
   * Reads stdout until `text` has appeared; false when the output ended first or 30 s
   * passed (held-back output never comes while the task waits).
   */
  const until = async (text: string): Promise<boolean> => {
    const deadline = Date.now() + 30_000;
    while (!seen.includes(text)) {
      const timeout = Bun.sleep(Math.max(0, deadline - Date.now())).then(() => 'timeout' as const);
      const chunk = await Promise.race([reader.read(), timeout]);
      if (chunk === 'timeout' || chunk.done) return false;
      seen += decoder.decode(chunk.value, { stream: true });
    }
    return true;
  };
  const killer = setTimeout(() => proc.kill('SIGKILL'), 90_000);
  try {
    // Both lines arrive while typecheck still waits for the file.
    expect(await until('typecheck-started')).toBe(true);
    expect(await until('lint-ran')).toBe(true);
    expect(seen).not.toContain('typecheck-ended');
    expect(proc.exitCode).toBeNull();

    writeFileSync(join(dir, 'go'), '');
    expect(await until('typecheck-ended')).toBe(true);
    expect(await until('2 successful, 2 total')).toBe(true);
    expect(await proc.exited).toBe(0);
  } finally {
    clearTimeout(killer);
    proc.kill('SIGKILL');
  }
}, 120_000);
