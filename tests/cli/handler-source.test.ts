/**
 * For `onceq worker`: like `work`, it says which handler it runs and where
 * that choice came from (`handler v2 (from onceq.config.json)`), since a handler chosen in
 * setup silently changes every later result. The real process, stopped by SIGTERM.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type CliSandbox, cliSandbox, DEMO_JSONL } from '../support/cli.ts';

let box: CliSandbox;

beforeAll(async () => {
  box = cliSandbox();
  expect((await box.run(['enqueue', DEMO_JSONL])).code).toBe(0);
});

afterAll(() => box.cleanup());

/** Starts `onceq worker`, waits for its handler line, stops it; resolves to that line. */
async function handlerLine(args: string[]): Promise<string> {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  delete env.CI;
  const proc = Bun.spawn(['bun', BIN, 'worker', ...args], {
    cwd: box.cwd,
    env,
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const killer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  let stderr = '';
  try {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      const line = stderr.split('\n').find((l) => / handler: /.test(l));
      if (line !== undefined) {
        proc.kill('SIGTERM');
        expect(await proc.exited).toBe(0);
        return line;
      }
    }
    throw new Error(`worker ended without a handler line: ${stderr}`);
  } finally {
    clearTimeout(killer);
    proc.kill('SIGKILL');
  }
}

test('worker: handler and its source, from the default, the config and the flag', async () => {
  expect(await handlerLine([])).toEndWith(' handler: handler v1 (from the default)');
  writeFileSync(join(box.cwd, 'onceq.config.json'), '{"handler": "v2"}\n');
  expect(await handlerLine([])).toEndWith(' handler: handler v2 (from onceq.config.json)');
  expect(await handlerLine(['--handler', 'v1'])).toEndWith(' handler: handler v1 (from --handler)');
}, 120_000);

test('worker: a module named in onceq.config.json, resolved beside it; a bad value names the key', async () => {
  writeFileSync(
    join(box.cwd, 'mine.ts'),
    "export const version = 'mine-1';\nexport const handle = () => ({ category: 'book', amountCents: 1 });\n",
  );
  writeFileSync(join(box.cwd, 'onceq.config.json'), '{"handler": "./mine.ts"}\n');
  expect(await handlerLine([])).toEndWith(
    ' handler: handler mine-1 (from ./mine.ts in onceq.config.json)',
  );
  writeFileSync(join(box.cwd, 'onceq.config.json'), '{"handler": "v7"}\n');
  const bad = await box.run(['work']);
  expect([bad.code, bad.stderr]).toEqual([
    2,
    `onceq: invalid config file ${join(box.cwd, 'onceq.config.json')}: "handler" must be one of v1, v2, or the path of your handler module (like "./my-handler.ts")\n`,
  ]);
}, 120_000);
