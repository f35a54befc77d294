/**
 * Output through the real process: a reader that goes away (`onceq list | head -1`) is
 * not an error of onceq's. The CLI writes with console.log / console.error (start-up:
 * no Node stream objects); this pins that a closed pipe still ends quietly with the
 * command's own exit code, never EPIPE's stack.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type CliSandbox, cliSandbox } from '../support/cli.ts';
import { runProcess } from '../support/spawn.ts';

let box: CliSandbox;

beforeAll(async () => {
  box = cliSandbox();
  // 500 messages with 2,000-byte notes: `list --json` prints about 1 MB, far more than a
  // pipe holds, so the writer is still writing when the reader has gone.
  const note = 'x'.repeat(2000);
  const lines = Array.from(
    { length: 500 },
    (_, i) =>
      `{"event_id":"E${String(i).padStart(4, '0')}","payload":{"category":"book","amount_cents":100,"note":"${note}"}}`,
  );
  writeFileSync(join(box.cwd, 'big.jsonl'), `${lines.join('\n')}\n`);
  const r = await box.run(['enqueue', '--split', 'big.jsonl']);
  if (r.code !== 0) throw new Error(`enqueue failed: ${r.stderr}`);
});

afterAll(() => box.cleanup());

test('a reader that goes away: exit 0, nothing on stderr (list --json | head -c 100)', async () => {
  const r = await runProcess(
    [
      'bash',
      '-c',
      `bun ${JSON.stringify(BIN)} list --json --limit 500 2>err.txt | head -c 100 >/dev/null; echo "\${PIPESTATUS[0]}"`,
    ],
    { cwd: box.cwd },
  );
  expect(r.stdout).toBe('0\n');
  expect(await Bun.file(join(box.cwd, 'err.txt')).text()).toBe('');
  // The same command to the end prints all of it: the output really is that large.
  const full = await box.run(['list', '--json', '--limit', '500']);
  expect(full.stdout.length).toBeGreaterThan(1_000_000);
});

test('--json names a message as the library does, in snake_case: eventId → event_id, lastErrorCode → last_error_code', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { enqueue, openStore, show, work } = await import('@onceq/core');
  const { handlers } = await import('@onceq/handler');
  const { messageJson } = await import('@onceq/cli/commands/show.ts');
  const dir = mkdtempSync(join(tmpdir(), 'onceq-names-'));
  const store = await openStore(join(dir, 'names.db'));
  try {
    await enqueue(
      store,
      '{"event_id":"E0001","payload":{"category":"book","amount_cents":1}}\n{"event_id":"E0002","payload":{"category":"toy","amount_cents":1}}\n',
    );
    await work(store, handlers.v1);
    const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    for (const id of ['E0001', 'E0002']) {
      const view = await show(store, id);
      // payloadText is the payload's text, which --json embeds as `payload`; the pruned
      // completion and ordering key fields appear when they apply, the queue when it is
      // not `default`.
      const expected = Object.entries(view)
        .filter(([key]) => key !== 'payloadText')
        .filter(
          ([key, value]) =>
            !(['prunedAt', 'payloadSha256', 'completion', 'key'].includes(key) && value === null),
        )
        .filter(([key, value]) => !(key === 'queue' && value === 'default'))
        .map(([key]) => snake(key));
      expect(Object.keys(messageJson(view)).sort()).toEqual(expected.sort());
    }
    expect(
      (messageJson(await show(store, 'E0002')) as { last_error_code: unknown }).last_error_code,
    ).toBe('invalid_payload');
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the CLI and the console write a time relative to now the same way', async () => {
  const { humanTime } = await import('@onceq/cli/output.ts');
  const { timeCell } = await import('@onceq/console/format.ts');
  const now = 1_796_025_600;
  const seen = [0, 30, 90, 150, 7_199, 90_000, -200_000].map((delta) => {
    const cli = /\(([^)]*)\)$/.exec(humanTime(now + delta, now))?.[1];
    const console = /class="rel">\(([^)]*)\)/.exec(timeCell(now + delta, now).text)?.[1];
    return { delta, cli, console };
  });
  expect(seen.map(({ cli }) => cli)).toEqual([
    'now',
    'in 30 s',
    'in 90 s',
    'in 3 min',
    'in 120 min',
    'in 25 h',
    '2 d ago',
  ]);
  for (const { delta, cli, console } of seen)
    expect({ delta, console }).toEqual({ delta, console: cli });
});
