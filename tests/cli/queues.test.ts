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

test('a bad queue name is refused in one sentence (exit 2), before anything is written', async () => {
  sandbox();
  const bad = await at('enqueue', '--queue', 'pay/ments', 'pay.jsonl');
  expect([bad.code, bad.stderr.trim()]).toEqual([
    2,
    'onceq: --queue must be 1 to 64 letters, digits, "_", "-" or "." starting with a letter or digit, got "pay/ments"',
  ]);
  const badList = await at('worker', '--queue', 'payments,');
  expect(badList.code).toBe(2);
  expect(badList.stderr).toContain('--queue takes queue names separated by commas');
  expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
});

test('one work --queue a,b runs each queue with its own handler and policy from the config', async () => {
  sandbox();
  const toy = (id: string) => line(id, { category: 'toy', amount_cents: 300 });
  writeFileSync(join(box.cwd, 'refunds.jsonl'), batch(toy('E0003')));
  writeFileSync(
    join(box.cwd, 'onceq.config.json'),
    JSON.stringify({
      queues: {
        payments: { handler: './outage.ts', attempts: 2, backoff: '7s' },
        refunds: { handler: 'v2', attempts: 1 },
      },
    }),
  );
  expect((await at('enqueue', '--queue', 'payments', 'pay.jsonl')).code).toBe(0);
  expect((await at('enqueue', '--queue', 'refunds', 'refunds.jsonl')).code).toBe(0);
  const run = await at('work', '--queue', 'payments,refunds', '--json');
  expect(run.code).toBe(0);
  // refunds runs v2 (toy is known to it): done; payments runs outage.ts: retried after its 7 s.
  expect(json(run)).toMatchObject({
    handlers: { payments: 'outage-test', refunds: 'v2' },
    handler_sources: { payments: './outage.ts', refunds: 'config' },
    claimed: 2,
    done: 1,
    retried: 1,
  });
  expect(json(await at('show', 'E0003', '--json'))).toMatchObject({ state: 'done' });
  expect(json(await at('show', 'E0001', '--json'))).toMatchObject({
    state: 'ready',
    attempts: 1,
    available_at: 1007,
  });
  // payments' second attempt is its last (attempts 2): dead.
  const last = await box.run(['work', '--queue', 'payments,refunds', '--now', '1007']);
  expect(last.code).toBe(0);
  expect(last.stderr).toContain(
    'queue payments: handler outage-test (from ./outage.ts in onceq.config.json)',
  );
  expect(last.stderr).toContain('queue refunds: handler v2 (from onceq.config.json)');
  expect(json(await at('show', 'E0001', '--json'))).toMatchObject({
    state: 'dead',
    attempts: 2,
    last_error_code: 'provider_down',
  });
});

/** default: E0001 done, E0002 dead; payments: E0003 done, E0004 dead (toy is unknown to v1). */
async function twoQueues(): Promise<void> {
  sandbox();
  const book = (id: string) => line(id, { category: 'book', amount_cents: 100 });
  const toy = (id: string) => line(id, { category: 'toy', amount_cents: 300 });
  writeFileSync(join(box.cwd, 'default.jsonl'), batch(book('E0001'), toy('E0002')));
  writeFileSync(join(box.cwd, 'payments.jsonl'), batch(book('E0003'), toy('E0004')));
  expect((await at('enqueue', 'default.jsonl')).code).toBe(0);
  expect((await at('enqueue', '--queue', 'payments', 'payments.jsonl')).code).toBe(0);
  expect((await at('work', '--queue', 'default,payments')).code).toBe(0);
}

test('status counts per queue once the store has more than default, and status --queue shows one', async () => {
  sandbox();
  expect((await at('enqueue', 'other.jsonl')).code).toBe(0);
  // A store of the default queue alone: no per-queue counts, in text or JSON.
  expect(json(await at('status', '--json'))).not.toHaveProperty('queues');
  expect((await at('status')).stdout).not.toContain('queue ');
  box.cleanup();
  await twoQueues();
  const all = json<{ queues: unknown }>(await at('status', '--json'));
  expect(all.queues).toEqual({
    default: { ready: 0, leased: 0, done: 1, dead: 1 },
    payments: { ready: 0, leased: 0, done: 1, dead: 1 },
  });
  const text = (await at('status')).stdout;
  expect(text).toContain('queue     ready  leased  done  dead  total');
  expect(text).toContain('payments      0       0     1     1      2');
  expect(json(await at('status', '--queue', 'payments', '--json'))).toMatchObject({
    queue: 'payments',
    messages: { ready: 0, leased: 0, done: 1, dead: 1 },
    effects: 1,
    totals: { book: 100 },
    total: 100,
  });
  expect((await at('status', '--queue', 'payments')).stdout).toContain('queue  payments\n');
});

test('dlq --queue lists one queue; redrive --all --queue redrives only it', async () => {
  await twoQueues();
  const dead = json<{ event_id: string; queue?: string }[]>(
    await at('dlq', '--queue', 'payments', '--json'),
  );
  expect(dead.map((m) => [m.event_id, m.queue])).toEqual([['E0004', 'payments']]);
  expect((await at('dlq', '--queue', 'refunds')).stdout.trim()).toBe(
    'no dead messages in queue refunds',
  );
  expect(json(await at('redrive', '--all', '--queue', 'payments', '--json'))).toEqual({
    redriven: ['E0004'],
  });
  expect(json(await at('show', 'E0002', '--json'))).toMatchObject({ state: 'dead' });
  expect((await at('redrive', '--all', '--queue', 'payments')).stdout.trim()).toBe(
    'nothing to redrive: no dead messages in queue payments',
  );
});

test('prune --queue prunes only that queue', async () => {
  await twoQueues();
  const pruned = json(
    await box.run([
      'prune',
      '--queue',
      'payments',
      '--done-older-than',
      '10s',
      '--json',
      '--now',
      '2000',
    ]),
  );
  expect(pruned).toMatchObject({ queue: 'payments', done: 1, dead: 0 });
  expect(json(await at('show', 'E0003', '--json'))).toHaveProperty('pruned_at', 2000);
  expect(json(await at('show', 'E0001', '--json'))).not.toHaveProperty('pruned_at');
});

test('--queue of status, dlq, redrive and prune is refused in one sentence when it cannot work (exit 2)', async () => {
  sandbox();
  const rule =
    'onceq: --queue must be 1 to 64 letters, digits, "_", "-" or "." starting with a letter or digit, got "pay/ments"';
  for (const args of [
    ['status'],
    ['dlq'],
    ['redrive', '--all'],
    ['prune', '--done-older-than', '1d'],
  ]) {
    const bad = await at(...args, '--queue', 'pay/ments');
    expect([args[0], bad.code, bad.stderr.trim()]).toEqual([args[0], 2, rule]);
  }
  const ids = await at('redrive', 'E0001', '--queue', 'payments');
  expect([ids.code, ids.stderr.trim()]).toEqual([
    2,
    'onceq: --queue selects with --all: give --all --queue NAME, or event ids without --queue',
  ]);
  const forget = await at('prune', '--forget-older-than', '5d', '--queue', 'payments');
  expect(forget.code).toBe(2);
  expect(forget.stderr).toContain('--forget-older-than applies to the whole store');
  expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
});
