// The examples are runnable and tested: the library snippet from a directory outside
// the workspace, and the handler module through `onceq work`, `complete` and
// `redrive --dry-run` (the worker tests run a module through `onceq worker`).
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { runProcess } from '../support/spawn.ts';

// Real processes on a shared, loaded machine: a generous bound (every wait is for a condition).
setDefaultTimeout(120_000);

const EXAMPLES = resolve(import.meta.dir, '..', '..', 'examples');
const TIPS = join(EXAMPLES, 'handler', 'tips.ts');

describe('examples', () => {
  let box: CliSandbox;
  beforeEach(() => {
    box = cliSandbox();
  });
  afterEach(() => box.cleanup());

  const ok = async (args: string[]) => {
    const r = await box.run(args);
    if (r.code !== 0) throw new Error(`onceq ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r;
  };

  test('the library snippet runs from a directory outside the workspace', async () => {
    const r = await runProcess(['bun', join(EXAMPLES, 'library.ts'), join(box.cwd, 'lib.db')], {
      cwd: box.cwd,
    });
    expect(r.stderr).not.toContain('Cannot find module');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      messages: { ready: 0, leased: 0, done: 3, dead: 1 },
      effects: 3,
      totals: { book: 15000, pen: 2000 },
      total: 17000,
    });
  });

  test('the tips handler module: work, redrive --dry-run and complete run it; v1 would not', async () => {
    const lines = [
      { event_id: 'E0001', payload: { category: 'tip', amount_cents: 250 } },
      { event_id: 'E0002', payload: { category: 'toy', amount_cents: 3000 } },
      { event_id: 'E0003', payload: { category: 'tip', amount_cents: 20000 } },
    ];
    writeFileSync(join(box.cwd, 'tips.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n'));
    await ok(['enqueue', 'tips.jsonl', '--now', '1000']);
    // Under v1 the tip and the toy go to the DLQ.
    expect(json(await ok(['work', '--now', '1000', '--json']))).toMatchObject({ done: 0, dead: 3 });
    const dry = json<{
      handler: string;
      messages: { event_id: string; accepted: boolean; code: string | null }[];
    }>(await ok(['redrive', '--all', '--dry-run', '--handler', TIPS, '--json', '--now', '1001']));
    expect(dry.handler).toBe('tips-v1');
    expect(dry.messages.map((m) => [m.event_id, m.accepted, m.code])).toEqual([
      ['E0001', true, null],
      ['E0002', true, null],
      ['E0003', false, 'tip_too_large'],
    ]);
    await ok(['redrive', 'E0001', 'E0002', '--now', '1001']);
    const worked = await ok(['work', '--handler', TIPS, '--now', '1001']);
    expect(worked.stdout).toContain('handler tips-v1: claimed 2 messages: 2 done');
    const status = json<{ totals: Record<string, number> }>(await ok(['status', '--json']));
    expect(status.totals).toEqual({ tip: 250, toy: 3000 });

    // complete runs the module on the stored payload under the given lease.
    await ok(['redrive', 'E0003', '--now', '1002']);
    const lease = json<{ generation: number }>(await ok(['claim', '--json', '--now', '1002']));
    const done = json<{ outcome: string; code: string }>(
      await ok([
        'complete',
        'E0003',
        '--generation',
        String(lease.generation),
        '--handler',
        TIPS,
        '--json',
        '--now',
        '1002',
      ]),
    );
    expect(done).toMatchObject({ outcome: 'dead', code: 'tip_too_large' });
  });

  test('a --handler module that is missing or exports no handle is a usage error (exit 2)', async () => {
    const missing = await box.run(['work', '--handler', './nope.ts']);
    expect([missing.code, missing.stderr]).toEqual([
      2,
      'onceq: --handler ./nope.ts: no such file\n',
    ]);
    writeFileSync(join(box.cwd, 'bad.ts'), 'export const version = "x";\n');
    const bad = await box.run(['worker', '--handler', './bad.ts']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'onceq: --handler ./bad.ts: the module must export a function handle(payload, context)\n',
    );
  });
});
