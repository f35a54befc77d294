// Ordering keys as a user runs them (the real `onceq` process): enqueue --key-field, a
// blocked key in status and dlq, skip; exit codes and one-sentence errors.
import { afterEach, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { batch, line } from '../support/factories.ts';

let box: CliSandbox;
afterEach(() => box?.cleanup());

const order = (category: string, amount: number, customer?: string) => ({
  category,
  amount_cents: amount,
  ...(customer === undefined ? {} : { customer: { id: customer } }),
});

test('enqueue --key-field orders a customer, a dead head blocks only its key, skip releases it', async () => {
  box = cliSandbox();
  const run = (...args: string[]) => box.run([...args, '--now', '1000']);
  writeFileSync(
    join(box.cwd, 'orders.jsonl'),
    batch(
      line('E0001', order('toy', 100, 'c1')),
      line('E0002', order('book', 200, 'c1')),
      line('E0003', order('book', 300, 'c2')),
      line('E0004', order('book', 400)),
    ),
  );
  const refused = await run('enqueue', 'orders.jsonl', '--key-field', 'customer.id');
  expect(refused.code).toBe(3);
  expect(refused.stderr).toContain('line 4: the payload has no customer.id');
  expect(
    json(
      await run(
        'enqueue',
        'orders.jsonl',
        '--key-field',
        'customer.id',
        '--key-field-optional',
        '--json',
      ),
    ),
  ).toEqual({ accepted: 4, duplicates: 0 });
  // v1 does not know toy: E0001 dies and holds c1's E0002 back; c2 and the unkeyed go on.
  expect((await run('work')).code).toBe(0);
  const status = json<Record<string, unknown>>(await run('status', '--json'));
  expect(status.messages).toEqual({ ready: 0, leased: 0, done: 2, dead: 1, waiting: 1 });
  expect(status.blocked_keys).toEqual({
    count: 1,
    keys: [{ queue: 'default', key: 'c1', dead_head: 'E0001', dead_since: 1000, waiting: 1 }],
  });
  expect((await run('dlq')).stdout).toContain('default  c1   E0001            1');

  const notDead = await run('skip', 'E0002');
  expect([notDead.code, notDead.stderr.trim()]).toEqual([
    4,
    'onceq: skip refused, only dead messages can be skipped (E0002 is waiting); nothing changed',
  ]);
  expect(json(await run('skip', 'E0001', '--json'))).toEqual({ skipped: ['E0001'] });
  expect((await run('work')).code).toBe(0);
  expect(json<{ messages: unknown }>(await run('status', '--json')).messages).toEqual({
    ready: 0,
    leased: 0,
    done: 3,
    dead: 0,
    skipped: 1,
  });
});

test('--key-field-optional without --key-field, and an empty path part, are usage errors', async () => {
  box = cliSandbox();
  writeFileSync(join(box.cwd, 'one.jsonl'), batch(line('E0001', order('book', 1, 'c1'))));
  const alone = await box.run(['enqueue', 'one.jsonl', '--key-field-optional']);
  expect([alone.code, alone.stderr.trim()]).toEqual([
    2,
    'onceq: --key-field-optional needs --key-field',
  ]);
  const empty = await box.run(['enqueue', 'one.jsonl', '--key-field', 'customer..id']);
  expect(empty.code).toBe(2);
  expect(empty.stderr).toContain('--key-field needs a dotted path');
});

test('enqueue --delay and --at hold new messages until their time; a bad time is a usage error', async () => {
  box = cliSandbox();
  writeFileSync(join(box.cwd, 'one.jsonl'), batch(line('E0001', order('book', 1))));
  writeFileSync(join(box.cwd, 'two.jsonl'), batch(line('E0002', order('book', 2))));
  expect((await box.run(['enqueue', 'one.jsonl', '--delay', '10m', '--now', '1000'])).code).toBe(0);
  const at = await box.run([
    'enqueue',
    'two.jsonl',
    '--at',
    '1970-01-01T00:30:00Z',
    '--now',
    '1000',
  ]);
  expect(at.code).toBe(0);
  const status = json<Record<string, unknown>>(
    await box.run(['status', '--json', '--now', '1000']),
  );
  expect([status.oldest_ready_at, status.next_due_at]).toEqual([null, 1600]);
  expect((await box.run(['claim', '--json', '--now', '1599'])).stdout.trim()).toBe('null');
  expect(
    json<{ event_id: string }>(
      await box.run(['claim', '--json', '--lease', '1000', '--now', '1600']),
    ).event_id,
  ).toBe('E0001');
  expect(
    json<{ event_id: string }>(await box.run(['claim', '--json', '--now', '1800'])).event_id,
  ).toBe('E0002');
  const bad = await box.run(['enqueue', 'one.jsonl', '--at', 'tomorrow']);
  expect([bad.code, bad.stderr]).toEqual([
    2,
    expect.stringContaining('--at needs an ISO 8601 time'),
  ]);
  const both = await box.run([
    'enqueue',
    'one.jsonl',
    '--at',
    '2026-01-01T00:00:00Z',
    '--delay',
    '1m',
  ]);
  expect([both.code, both.stderr.trim()]).toEqual([2, 'onceq: give --delay or --at, not both']);
});
