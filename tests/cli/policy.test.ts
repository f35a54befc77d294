// A queue's policy as a user sets it (the real `onceq` process): --attempts, --backoff,
// --lease, --on-dead on `work` and `worker`, the config file's `queues`, and the one
// sentence (exit 2, nothing written) for each bad value.
import { afterEach, describe, expect, test } from 'bun:test';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { batch, line } from '../support/factories.ts';

const OUTAGE = resolve(import.meta.dir, '../support/handlers/outage.ts');

let box: CliSandbox;
afterEach(() => box?.cleanup());

interface Shown {
  state: string;
  attempts: number;
  available_at: number;
  last_error_code: string | null;
}

function sandbox(): CliSandbox {
  box = cliSandbox();
  copyFileSync(OUTAGE, join(box.cwd, 'outage.ts'));
  writeFileSync(
    join(box.cwd, 'one.jsonl'),
    batch(line('E0001', { category: 'book', amount_cents: 100 })),
  );
  return box;
}

const at = (now: number, ...args: string[]) => box.run([...args, '--now', String(now)]);
const shown = async (now: number) => json<Shown>(await at(now, 'show', 'E0001', '--json'));

test('--attempts and --backoff carry a message through an outage the default sends to the DLQ', async () => {
  sandbox();
  expect((await at(1000, 'enqueue', 'one.jsonl')).code).toBe(0);
  const policy = ['--handler', './outage.ts', '--attempts', '4', '--backoff', '10s,1m'];
  expect((await at(1000, 'work', ...policy)).code).toBe(0);
  expect(await shown(1000)).toMatchObject({ state: 'ready', attempts: 1, available_at: 1010 });
  expect((await at(1010, 'work', ...policy)).code).toBe(0);
  expect(await shown(1010)).toMatchObject({ state: 'ready', attempts: 2, available_at: 1070 });
  expect((await at(1070, 'work', ...policy)).code).toBe(0);
  // The last delay repeats.
  expect(await shown(1070)).toMatchObject({ state: 'ready', attempts: 3, available_at: 1130 });
  writeFileSync(join(box.cwd, 'up'), '');
  expect((await at(1130, 'work', ...policy)).code).toBe(0);
  expect(await shown(1130)).toMatchObject({ state: 'done', attempts: 4 });
});

test('without flags the lesson policy holds: 1 s, then 2 s, dead after 3 attempts', async () => {
  sandbox();
  expect((await at(1000, 'enqueue', 'one.jsonl')).code).toBe(0);
  for (const [now, state, next] of [
    [1000, 'ready', 1001],
    [1001, 'ready', 1003],
    [1003, 'dead', 1003],
  ] as const) {
    expect((await at(now, 'work', '--handler', './outage.ts')).code).toBe(0);
    expect(await shown(now)).toMatchObject({ state, available_at: next });
  }
});

test("the config file's queues.default sets the policy, and a flag overrides it", async () => {
  sandbox();
  writeFileSync(
    join(box.cwd, 'onceq.config.json'),
    JSON.stringify({ queues: { default: { attempts: 2, backoff: '5s', lease: '1m' } } }),
  );
  expect((await at(1000, 'enqueue', 'one.jsonl')).code).toBe(0);
  expect((await at(1000, 'claim', '--json')).code).toBe(0); // lease of `claim`: 30 s
  // The lease ran out at 1030; work recovers it and claims it again, with a 60 s lease.
  expect((await at(1030, 'work', '--handler', './outage.ts', '--backoff', '7s')).code).toBe(0);
  expect(await shown(1030)).toMatchObject({ state: 'dead', attempts: 2 });
  const config = sandbox();
  writeFileSync(
    join(config.cwd, 'onceq.config.json'),
    JSON.stringify({ queues: { default: { attempts: 2, backoff: '5s' } } }),
  );
  expect((await at(1000, 'enqueue', 'one.jsonl')).code).toBe(0);
  expect((await at(1000, 'work', '--handler', './outage.ts')).code).toBe(0);
  expect(await shown(1000)).toMatchObject({ state: 'ready', available_at: 1005 });
  expect((await at(1005, 'work', '--handler', './outage.ts', '--backoff', '7s')).code).toBe(0);
  expect(await shown(1005)).toMatchObject({ state: 'dead', attempts: 2 });
});

test('exp:BASE..CAP doubles up to its cap, each delay jittered between half and all of it', async () => {
  sandbox();
  expect((await at(1000, 'enqueue', 'one.jsonl')).code).toBe(0);
  const policy = ['--handler', './outage.ts', '--attempts', '10', '--backoff', 'exp:4s..10s'];
  let now = 1000;
  for (const full of [4, 8, 10, 10]) {
    expect((await at(now, 'work', ...policy)).code).toBe(0);
    const { available_at } = await shown(now);
    expect(available_at - now).toBeGreaterThanOrEqual(full / 2);
    expect(available_at - now).toBeLessThanOrEqual(full);
    now = available_at;
  }
});

describe('bad policy values: one sentence naming the flag or key, exit 2, nothing written', () => {
  const cases: [string[], string][] = [
    [['--attempts', '0'], '--attempts must be a whole number ≥ 1, got "0"'],
    [['--attempts', '1001'], '--attempts is out of range: 1001 is more than 1,000'],
    [
      ['--backoff', '1x'],
      '--backoff must be a list of durations like 1s,5s,1m (the last repeats) or exp:BASE..CAP like exp:1s..10m (doubling, capped, jittered), each at most 30d and at most 100 of them; got "1x"',
    ],
    [
      ['--backoff', 'exp:1m..1s'],
      '--backoff must be a list of durations like 1s,5s,1m (the last repeats) or exp:BASE..CAP like exp:1s..10m (doubling, capped, jittered), with 1s ≤ BASE ≤ CAP ≤ 30d; got "exp:1m..1s"',
    ],
    [
      ['--lease', '0s'],
      '--lease must be a duration from 1s to 1d like 30s or 5m (a bare number is seconds), got "0s"',
    ],
    [['--on-dead', 'drop'], '--on-dead must be block or skip, got "drop"'],
  ];
  for (const command of ['work', 'worker']) {
    for (const [flags, message] of cases) {
      test(`${command} ${flags.join(' ')}`, async () => {
        sandbox();
        const result = await at(1000, command, ...flags);
        expect([result.code, result.stderr.trim(), result.stdout]).toEqual([
          2,
          `onceq: ${message}`,
          '',
        ]);
      });
    }
  }

  test('a bad backoff in the config file names the file and the key', async () => {
    sandbox();
    writeFileSync(
      join(box.cwd, 'onceq.config.json'),
      JSON.stringify({ queues: { default: { backoff: 'soon' } } }),
    );
    const result = await at(1000, 'work');
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toStartWith(
      'onceq: onceq.config.json "queues.default.backoff" must be a list of durations',
    );
  });

  test('a bad queue name in the config file is refused with the rule', async () => {
    sandbox();
    writeFileSync(
      join(box.cwd, 'onceq.config.json'),
      JSON.stringify({ queues: { 'pay ments': {} } }),
    );
    const result = await at(1000, 'work');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('1 to 64 letters, digits');
  });
});
