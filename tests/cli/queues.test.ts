// Named queues as a user runs them (the real `onceq` process): enqueue --queue, work and
// worker --queue with the config's per-queue handler, and the one-sentence refusals.
import { afterEach, expect, test } from 'bun:test';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { batch, line } from '../support/factories.ts';

const OUTAGE = resolve(import.meta.dir, '../support/handlers/outage.ts');

let box: CliSandbox;
afterEach(() => box?.cleanup());

const at = (...args: string[]) => box.run([...args, '--now', '1000']);

function sandbox(): CliSandbox {
  box = cliSandbox();
  copyFileSync(OUTAGE, join(box.cwd, 'outage.ts'));
  writeFileSync(
    join(box.cwd, 'pay.jsonl'),
    batch(line('E0001', { category: 'book', amount_cents: 100 })),
  );
  writeFileSync(
    join(box.cwd, 'other.jsonl'),
    batch(line('E0002', { category: 'book', amount_cents: 200 })),
  );
  return box;
}

test('enqueue --queue puts events in a queue only work --queue claims, with its configured handler', async () => {
  sandbox();
  writeFileSync(
    join(box.cwd, 'onceq.config.json'),
    JSON.stringify({ queues: { payments: { handler: './outage.ts', attempts: 5 } } }),
  );
  expect((await at('enqueue', '--queue', 'payments', 'pay.jsonl')).code).toBe(0);
  expect((await at('enqueue', 'other.jsonl')).code).toBe(0);
  expect(json(await at('work', '--json'))).toMatchObject({ claimed: 1, done: 1 });
  // payments runs outage.ts (the provider is down), with 5 attempts: retried, not dead.
  const payments = json(await at('work', '--queue', 'payments', '--json'));
  expect(payments).toMatchObject({ handler: 'outage-test', claimed: 1, retried: 1 });
  expect(json(await at('show', 'E0001', '--json'))).toMatchObject({
    queue: 'payments',
    state: 'ready',
    attempts: 1,
  });
  const listed = json<{ messages: { event_id: string; queue?: string }[] }>(
    await at('list', '--queue', 'payments', '--json'),
  );
  expect(listed.messages.map((m) => [m.event_id, m.queue])).toEqual([['E0001', 'payments']]);
});

test('the same event id in another queue is a conflict naming the queue it is in (exit 3)', async () => {
  sandbox();
  expect((await at('enqueue', '--queue', 'payments', 'pay.jsonl')).code).toBe(0);
  const again = await at('enqueue', 'pay.jsonl');
  expect(again.code).toBe(3);
  expect(again.stderr).toContain('event_id E0001 is already stored in queue "payments"');
  expect(json(await at('enqueue', '--queue', 'payments', 'pay.jsonl', '--json'))).toEqual({
    accepted: 0,
    duplicates: 1,
  });
});

test('a bad queue name, and queues a worker cannot run together, are refused in one sentence (exit 2)', async () => {
  sandbox();
  const bad = await at('enqueue', '--queue', 'pay/ments', 'pay.jsonl');
  expect([bad.code, bad.stderr.trim()]).toEqual([
    2,
    'onceq: --queue must be 1 to 64 letters, digits, "_", "-" or "." starting with a letter or digit, got "pay/ments"',
  ]);
  const badList = await at('worker', '--queue', 'payments,');
  expect(badList.code).toBe(2);
  expect(badList.stderr).toContain('--queue takes queue names separated by commas');
  writeFileSync(
    join(box.cwd, 'onceq.config.json'),
    JSON.stringify({
      queues: { payments: { handler: './outage.ts' }, refunds: { handler: 'v2' } },
    }),
  );
  const mixed = await at('worker', '--queue', 'payments,refunds');
  expect([mixed.code, mixed.stderr.trim()]).toEqual([
    2,
    'onceq: --queue payments and refunds have different handlers or policies in onceq.config.json: run one worker per queue (onceq worker --queue payments, onceq worker --queue refunds)',
  ]);
  // Refused before anything was written: not even a store.
  expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
});
