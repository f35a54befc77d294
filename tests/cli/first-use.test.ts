// What a new user meets first, through the real CLI: a redrive of a mistyped id on a
// store that does not exist creates nothing; status says when a message in backoff is
// due; prune and its errors print local times; one huge line is named as the problem
// (no --split hint that cannot help); redrive --help shows examples; a port another
// onceq listener holds is refused, for the console and for the worker's metrics alike.
import { describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { localTime } from '@onceq/core/internal';
import { BIN, cliSandbox, DEMO_JSONL } from '../support/cli.ts';

/** Reads `stream` until its text contains `needle` (bounded by the test's timeout). */
async function readUntil(stream: ReadableStream<Uint8Array>, needle: string): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!text.includes(needle)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before ${needle}: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
}

const NOW = 1_796_025_600;

describe('the CLI for a new user', () => {
  test('redrive and fail of an id on a store that does not exist: exit 2, no store created', async () => {
    const box = cliSandbox();
    try {
      for (const args of [
        ['redrive', 'nosuch'],
        ['fail', 'nosuch', '--generation', '1', '--permanent'],
      ]) {
        const r = await box.run(args);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(r.stderr).toContain(`no store at ${join(box.cwd, 'onceq.db')}`);
        expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
      }
    } finally {
      box.cleanup();
    }
  });

  test('status names when a message in backoff is due instead of "oldest ready -"', async () => {
    const box = cliSandbox();
    try {
      const at = ['--now', String(NOW)];
      expect((await box.run(['enqueue', DEMO_JSONL, ...at])).code).toBe(0);
      const claimed = JSON.parse((await box.run(['claim', '--json', ...at])).stdout);
      expect(
        (
          await box.run([
            'fail',
            claimed.event_id,
            '--generation',
            String(claimed.generation),
            '--temporary',
            ...at,
          ])
        ).code,
      ).toBe(0);
      // Drain the rest so only the one in backoff is ready.
      expect((await box.run(['work', ...at])).code).toBe(0);
      const r = await box.run(['status', ...at]);
      expect(r.stdout).toContain(
        `oldest ready  none claimable now; next due ${localTime(NOW + 1)} (in 1 s)`,
      );
      const json = JSON.parse((await box.run(['status', '--json', ...at])).stdout);
      expect(json.next_due_at).toBe(NOW + 1);
    } finally {
      box.cleanup();
    }
  });

  test('prune prints its cut-offs in local time, never raw Unix seconds', async () => {
    const box = cliSandbox();
    try {
      expect((await box.run(['enqueue', DEMO_JSONL, '--now', String(NOW)])).code).toBe(0);
      expect((await box.run(['work', '--now', String(NOW)])).code).toBe(0);
      const later = NOW + 40 * 86_400;
      const r = await box.run(['prune', '--done-older-than', '30d', '--now', String(later)]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`finished before ${localTime(later - 30 * 86_400)} (30 d ago)`);
      expect(r.stdout).not.toMatch(/\b1\d{9}\b/);
      // A repeat of a pruned event with another payload: the conflict names the local time.
      writeFileSync(
        join(box.cwd, 'changed.jsonl'),
        '{"event_id":"E0002","payload":{"category":"pen","amount_cents":2001}}\n',
      );
      const conflict = await box.run(['enqueue', 'changed.jsonl', '--now', String(later)]);
      expect(conflict.code).toBe(3);
      expect(conflict.stderr).toContain(`the original was pruned at ${localTime(later)} `);
      expect(conflict.stderr).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:/);
    } finally {
      box.cleanup();
    }
  });

  test('one 2 MB line is named as the problem, without a --split hint', async () => {
    const box = cliSandbox();
    try {
      const huge = `{"event_id":"E0001","payload":{"category":"book","amount_cents":1,"note":"${'x'.repeat(2_000_000)}"}}\n`;
      writeFileSync(join(box.cwd, 'huge.jsonl'), huge);
      const r = await box.run(['enqueue', 'huge.jsonl']);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('line 1: the line is more than 1,000,000 bytes');
      expect(r.stderr).toContain('a payload may hold at most 10,000 bytes');
      expect(r.stderr).not.toContain('--split');
    } finally {
      box.cleanup();
    }
  });

  test('redrive --help shows examples', async () => {
    const box = cliSandbox();
    try {
      const r = await box.run(['redrive', '--help']);
      expect(r.stdout).toContain('examples:\n  onceq redrive E0004\n');
      expect(r.stdout).toContain('onceq redrive --all --dry-run --handler v2');
    } finally {
      box.cleanup();
    }
  });

  test('a port another onceq listener holds is refused (exit 2, one sentence naming it) and the first keeps serving', async () => {
    const box = cliSandbox();
    // A free port, given explicitly to both: only then would Bun share it (SO_REUSEPORT).
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    const port = String(probe.port);
    await probe.stop(true);
    expect((await box.run(['enqueue', DEMO_JSONL])).code).toBe(0);
    const first = Bun.spawn(['bun', BIN, 'console', '--port', port], {
      cwd: box.cwd,
      env: { ...process.env },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    try {
      await readUntil(first.stdout, `http://127.0.0.1:${port}`);
      for (const [args, flag] of [
        [['console', '--port', port, '--allow-writes'], '--port'],
        [['worker', '--metrics-port', port], '--metrics-port'],
      ] as const) {
        const r = await box.run([...args]);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(r.stderr.split('\n').filter((l) => l.startsWith('onceq:'))).toEqual([
          `onceq: port ${port} on 127.0.0.1 is in use by another process; choose another with ${flag}`,
        ]);
      }
      // Every request still reaches the first console, read-only as it was started.
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/`);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('read-only');
      }
      expect(first.exitCode).toBeNull();
    } finally {
      first.kill('SIGTERM');
      await first.exited;
      box.cleanup();
    }
  });
});
