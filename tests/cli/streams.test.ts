// The streams commands as a user runs them (the real `onceq` process): id-policy, prune,
// doctor; exit codes and one-sentence errors. Backup has its own file (backup.test.ts).
import { Database as BunDatabase } from 'bun:sqlite';
import { afterEach, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDuration } from '@onceq/cli/duration.ts';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { batch, line, paid } from '../support/factories.ts';

let box: CliSandbox;
afterEach(() => box?.cleanup());

const DAY = 86_400;

test('a general store from the CLI: real ids enqueued, pruned after 30 days, a repeat still a duplicate, a changed payload a conflict naming the pruned original', async () => {
  box = cliSandbox();
  const run = (...args: string[]) => box.run([...args, '--now', String(1000 + 31 * DAY)]);
  expect((await box.run(['id-policy', 'set', 'general', '--now', '1000'])).code).toBe(0);
  const ids = ['evt_3Q9xKZ2e', '550e8400-e29b-41d4-a716-446655440000', 'orders-17:883421'];
  writeFileSync(
    join(box.cwd, 'real.jsonl'),
    batch(...ids.map((id, i) => line(id, paid('book', 100 * (i + 1))))),
  );
  expect((await box.run(['enqueue', 'real.jsonl', '--now', '1000'])).stdout).toContain(
    'accepted 3',
  );
  expect((await box.run(['work', '--now', '1000'])).code).toBe(0);

  const dry = await run('prune', '--done-older-than', '30d', '--dry-run', '--json');
  expect(json(dry)).toMatchObject({ dry_run: true, done: 3 });
  expect(json(dry)).toMatchObject({ duty_cycle: 0.1 });
  const pruned = await run('prune', '--done-older-than', '30d', '--duty-cycle', '1', '--json');
  expect(json(pruned)).toMatchObject({ dry_run: false, done: 3, dead: 0, duty_cycle: 1 });

  const again = await run('enqueue', 'real.jsonl', '--json');
  expect(json(again)).toEqual({ accepted: 0, duplicates: 3 });
  writeFileSync(join(box.cwd, 'changed.jsonl'), batch(line('orders-17:883421', paid('book', 301))));
  const conflict = await run('enqueue', 'changed.jsonl');
  expect(conflict.code).toBe(3);
  expect(conflict.stderr).toContain(
    'line 1: event_id orders-17:883421 conflicts with a pruned message',
  );

  const status = json<{ total: number; messages: { done: number } }>(await run('status', '--json'));
  expect([status.total, status.messages.done]).toEqual([600, 3]);
  expect((await run('doctor')).code).toBe(0);
});

test('id-policy: show, a refused change (exit 4, nothing changed), a bad policy (exit 2)', async () => {
  box = cliSandbox();
  writeFileSync(join(box.cwd, 'b.jsonl'), batch(line('evt_1', paid('pen', 5))));
  expect((await box.run(['id-policy', 'set', 'general'])).code).toBe(0);
  expect((await box.run(['enqueue', 'b.jsonl'])).code).toBe(0);
  const refused = await box.run(['id-policy', 'set', 'lesson']);
  expect(refused.code).toBe(4);
  expect(refused.stderr.trim()).toBe(
    'onceq: id policy lesson refused: 1 stored event id would not fit ("evt_1"); the policy stays general',
  );
  expect(json(await box.run(['id-policy', '--json']))).toMatchObject({ id_policy: 'general' });
  const bad = await box.run(['id-policy', 'set', 'pattern:[']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toStartWith('onceq: invalid id policy "pattern:["');
  const lesson = cliSandbox();
  try {
    writeFileSync(join(lesson.cwd, 'b.jsonl'), batch(line('evt_1', paid('pen', 5))));
    const rejected = await lesson.run(['enqueue', 'b.jsonl']);
    expect(rejected.code).toBe(3);
    expect(rejected.stderr).toContain("under the store's id policy lesson");
  } finally {
    lesson.cleanup();
  }
});

test('prune refuses bad durations and a call without an age (exit 2, nothing opened)', async () => {
  box = cliSandbox();
  for (const args of [['prune'], ['prune', '--dead-older-than', '2w']]) {
    const r = await box.run(args);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toStartWith('onceq: ');
  }
});

test('prune --forget-older-than: below 3d refused in one sentence (exit 2, nothing opened) unless --force; then a forgotten UUIDv7 is refused naming the window', async () => {
  box = cliSandbox();
  const low = await box.run(['prune', '--forget-older-than', '2d']);
  expect(low.code).toBe(2);
  expect(low.stderr.trim().split('\n')).toHaveLength(1);
  expect(low.stderr).toStartWith('onceq: --forget-older-than 2d is below the 3-day floor');
  expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
  const stray = await box.run(['prune', '--done-older-than', '30d', '--force']);
  expect([stray.code, stray.stderr.trim()]).toEqual([
    2,
    'onceq: --force only applies to --forget-older-than',
  ]);

  const at = (day: number) => String(1_800_000_000 + day * DAY);
  expect((await box.run(['id-policy', 'set', 'general', '--now', at(0)])).code).toBe(0);
  const made = (1_800_000_000 * 1000).toString(16).padStart(12, '0');
  const id = `${made.slice(0, 8)}-${made.slice(8)}-7000-8000-000000000001`;
  writeFileSync(join(box.cwd, 'v7.jsonl'), batch(line(id, paid('book', 100))));
  expect((await box.run(['enqueue', 'v7.jsonl', '--now', at(0)])).code).toBe(0);
  expect((await box.run(['work', '--now', at(0)])).code).toBe(0);
  const result = await box.run([
    'prune',
    '--done-older-than',
    '1d',
    '--forget-older-than',
    '2d',
    '--force',
    '--json',
    '--now',
    at(4),
  ]);
  expect(json(result)).toMatchObject({ done: 1, forgotten: 1, forgotten_before: Number(at(2)) });
  const again = await box.run(['enqueue', 'v7.jsonl', '--now', at(4)]);
  expect(again.code).toBe(3);
  expect(again.stderr).toContain(`line 1: event_id ${id} was made at`);
  expect(again.stderr).toContain("before the store's dedup window");
  const { storage } = json<{
    storage: {
      bytes: number;
      events: number;
      bytes_per_event: number | null;
      forgotten_before: number;
    };
  }>(await box.run(['status', '--json', '--now', at(4)]));
  expect(storage.forgotten_before).toBe(Number(at(2)));
  expect([storage.events, storage.bytes_per_event]).toEqual([0, null]);
  expect(storage.bytes).toBeGreaterThan(0);
});

test('prune --duty-cycle takes a plain number from 0.01 to 1; anything else names the flag (exit 2)', async () => {
  box = cliSandbox();
  for (const bad of ['0', '0.001', '1.5', '1e-1', '50%', '-0.5', 'fast']) {
    const r = await box.run(['prune', '--done-older-than', '30d', `--duty-cycle=${bad}`]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `onceq: --duty-cycle must be a number from 0.01 to 1, got ${JSON.stringify(bad)}`,
    );
  }
  expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
});

test('durations: digits and one unit s, m, h, d; anything else is a usage error naming the flag', () => {
  expect([parseDuration('30d', 'f'), parseDuration('12h', 'f'), parseDuration('90m', 'f')]).toEqual(
    [30 * DAY, 12 * 3600, 90 * 60],
  );
  expect(parseDuration('3600s', 'f')).toBe(3600);
  for (const bad of ['30', '1.5d', '2w', '-1d', '1d2h', ' 1d', '']) {
    expect(() => parseDuration(bad, '--done-older-than')).toThrow('--done-older-than must be');
  }
});

test('doctor: exit 0 on a sound store; exit 3 with one line per problem, or one JSON document', async () => {
  box = cliSandbox();
  writeFileSync(
    join(box.cwd, 'b.jsonl'),
    batch(line('E0001', paid('book', 5)), line('E0002', paid('pen', 7))),
  );
  await box.run(['enqueue', 'b.jsonl']);
  await box.run(['work']);
  const healthy = await box.run(['doctor']);
  expect(healthy.code).toBe(0);
  expect(healthy.stdout).toStartWith('healthy: ');
  const raw = new BunDatabase(join(box.cwd, 'onceq.db'));
  raw.run("DELETE FROM effects WHERE event_id = 'E0001'");
  raw.run("UPDATE messages SET attempts = 9 WHERE event_id = 'E0002'");
  raw.close();
  const sick = await box.run(['doctor']);
  expect(sick.code).toBe(3);
  const lines = sick.stdout.trim().split('\n');
  expect(lines).toEqual([
    expect.stringMatching(/^problem: done_without_outcome: 1 message .*: E0001$/),
    expect.stringMatching(/^problem: attempts_out_of_bounds: 1 message .*: E0002$/),
    expect.stringMatching(/^2 problems in /),
  ]);
  const asJson = await box.run(['doctor', '--json']);
  expect(asJson.code).toBe(3);
  const report = json<{ healthy: boolean; findings: { check: string }[] }>(asJson);
  expect(report.healthy).toBe(false);
  expect(report.findings.map((f) => f.check)).toEqual([
    'done_without_outcome',
    'attempts_out_of_bounds',
  ]);
});
