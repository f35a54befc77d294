// The webhook commands at their edges, as real `onceq` processes: a missing secret, a
// bad endpoint or source in the config, bad flags: each one sentence naming what is at
// fault, exit 2, no secret printed. Then `onceq deliver --until-idle` against a local
// receiver and `onceq deliveries` listing, showing and redriving what it did, with the
// dead deliveries listed by `onceq status` and `onceq dlq` too; and an endpoint a 410
// disabled, sent to again after `onceq deliveries enable`.
import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, type Handler, openStore, work } from '@onceq/core';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';
import { nEvents } from '../support/factories.ts';
import { serveOnLoopback } from '../support/loopback-server.ts';

const SECRET = `whsec_${Buffer.from('cli secret!!, thirty-two bytes..').toString('base64')}`;
let box: CliSandbox;
/** What the receiver answers, and how many requests it got. */
let answerStatus = 500;
let requests = 0;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = serveOnLoopback(() => {
    requests += 1;
    return new Response(answerStatus === 200 ? 'ok' : 'down', { status: answerStatus });
  });
});
afterAll(() => server.stop(true));
afterEach(() => box?.cleanup());

function config(value: unknown) {
  writeFileSync(join(box.cwd, 'onceq.config.json'), JSON.stringify(value));
}

const ENDPOINT = () => ({
  url: `http://127.0.0.1:${server.port}/in`,
  secret_env: 'HOOKS_SECRET',
  retry_schedule: [0],
});

test('configuration and flag mistakes are one sentence each, exit 2, and print no secret', async () => {
  box = cliSandbox();
  config({ endpoints: { hooks: ENDPOINT() } });
  const missing = await box.run(['deliver', '--until-idle']);
  expect([missing.code, missing.stderr.trim()]).toEqual([
    2,
    "onceq: endpoint hooks: the environment variable HOOKS_SECRET is not set (it holds the endpoint's whsec_ secret)",
  ]);
  const weak = await box.run(['deliver', '--until-idle'], {
    env: { HOOKS_SECRET: 'whsec_c2hvcnQ=' },
  });
  expect([weak.code, weak.stderr.trim()]).toEqual([
    2,
    'onceq: endpoint hooks: secret 1: a secret must decode to 24 to 64 bytes, this one is 5',
  ]);
  const lease = await box.run(['deliver', '--until-idle', '--lease', '15'], {
    env: { HOOKS_SECRET: SECRET },
  });
  expect([lease.code, lease.stderr.trim()]).toEqual([
    2,
    "onceq: --lease 15 does not outlast endpoint hooks's timeout of 15000 ms",
  ]);
  config({ endpoints: { hooks: { ...ENDPOINT(), url: 'ftp://x' } } });
  const url = await box.run(['deliveries']);
  expect(url.code).toBe(2);
  expect(url.stderr).toContain('"endpoints.hooks.url"');
  config({ sources: {} });
  const noSources = await box.run(['serve', '--port', '0']);
  expect(noSources.code).toBe(2);
  expect(noSources.stderr).toContain('no sources in onceq.config.json');
  const state = await box.run(['deliveries', '--state', 'sent']);
  expect([state.code, state.stderr.trim()]).toEqual([
    2,
    'onceq: --state must be one of pending, leased, delivered, dead, got "sent"',
  ]);
  const redrive = await box.run(['deliveries', 'redrive']);
  expect([redrive.code, redrive.stderr.trim()]).toEqual([
    2,
    'onceq: deliveries redrive needs webhook ids or --all (not both)',
  ]);
  for (const r of [missing, weak, lease, url, noSources, state, redrive]) {
    expect(r.stdout + r.stderr).not.toContain(SECRET.slice(6, 30));
  }
});

test('deliver sends, deliveries lists, shows the attempts, and redrives the dead', async () => {
  box = cliSandbox();
  config({ endpoints: { hooks: ENDPOINT() } });
  const store = await openStore(join(box.cwd, 'onceq.db'));
  const handler: Handler = (_payload, context) => ({
    deliver: [{ to: 'hooks', body: { id: context.eventId } }],
  });
  await enqueue(store, nEvents(2).jsonl);
  await work(store, handler);
  await store.close();
  const env = { HOOKS_SECRET: SECRET };
  answerStatus = 500;
  const first = await box.run(['deliver', '--until-idle', '--json'], { env });
  expect(first.code).toBe(0);
  expect(json(first)).toMatchObject({ delivered: 0, dead: 2 });
  const attempt = JSON.parse(first.stderr.split('\n')[0] as string);
  expect(attempt).toMatchObject({ endpoint: 'hooks', attempt: 1, status: 500, outcome: 'dead' });
  const listed = json<{
    endpoints: unknown[];
    deliveries: { webhook_id: string; state: string }[];
  }>(await box.run(['deliveries', '--json']));
  expect(listed.endpoints).toEqual([
    {
      endpoint: 'hooks',
      pending: 0,
      leased: 0,
      delivered: 0,
      dead: 2,
      attempts: 2,
      disabled: null,
    },
  ]);
  expect(listed.deliveries.map((d) => [d.webhook_id, d.state])).toEqual([
    ['E0001:1', 'dead'],
    ['E0002:1', 'dead'],
  ]);
  const shown = await box.run(['deliveries', 'E0001:1']);
  expect(shown.stdout).toContain('the endpoint answered 500');
  // The dead deliveries are listed where dead things are looked for: status and dlq.
  const status = json<{
    deliveries: { endpoints: { dead: number }[]; dead: { count: number; first: unknown[] } };
  }>(await box.run(['status', '--json']));
  expect(status.deliveries.endpoints).toEqual([listed.endpoints[0] as { dead: number }]);
  expect(status.deliveries.dead.count).toBe(2);
  expect(status.deliveries.dead.first).toMatchObject([
    { webhook_id: 'E0001:1', endpoint: 'hooks', state: 'dead', last_status: 500 },
    { webhook_id: 'E0002:1', endpoint: 'hooks', state: 'dead', last_status: 500 },
  ]);
  const statusRun = await box.run(['status']);
  const statusText = statusRun.stdout;
  expect(statusText).toMatch(/hooks\s+0\s+0\s+0\s+2/);
  expect(statusText).toContain('dead deliveries  2 (send again: onceq deliveries redrive');
  const dlqRun = await box.run(['dlq']);
  const dlqText = dlqRun.stdout;
  expect(dlqText).toStartWith('no dead messages\n');
  expect(dlqText).toMatch(/E0001:1\s+hooks\s+1\s+500\s+the endpoint answered 500/);
  // --json lists them after the dead messages (none here), told apart by webhook_id;
  // --limit takes the first of them.
  const dlqJson = json<{ webhook_id?: string; endpoint: string; state: string }[]>(
    await box.run(['dlq', '--json']),
  );
  expect(dlqJson).toEqual([
    listed.deliveries[0] as { webhook_id: string; endpoint: string; state: string },
    listed.deliveries[1] as { webhook_id: string; endpoint: string; state: string },
  ]);
  expect(dlqJson.map((d) => [d.webhook_id, d.endpoint, d.state])).toEqual([
    ['E0001:1', 'hooks', 'dead'],
    ['E0002:1', 'hooks', 'dead'],
  ]);
  const firstDead = json<{ webhook_id: string }[]>(
    await box.run(['dlq', '--json', '--limit', '1']),
  );
  expect(firstDead.map((d) => d.webhook_id)).toEqual(['E0001:1']);
  const redriven = await box.run(['deliveries', 'redrive', '--all', '--json']);
  expect(json(redriven)).toEqual({ redriven: ['E0001:1', 'E0002:1'] });
  answerStatus = 200;
  const second = await box.run(['deliver', '--until-idle', '--json'], { env });
  expect(json(second)).toMatchObject({ delivered: 2, dead: 0 });
  const table = await box.run(['deliveries']);
  expect(table.stdout).toMatch(/hooks\s+0\s+0\s+2\s+0\s+4/);
  expect((await box.run(['dlq'])).stdout).toBe('the DLQ is empty\n');
  expect(json(await box.run(['dlq', '--json']))).toEqual([]);
  for (const r of [first, shown, second, table, statusRun, dlqRun])
    expect(r.stdout + r.stderr).not.toContain(SECRET.slice(6, 30));
});

test('a 410 disables the endpoint until deliveries enable; then its deliveries are sent', async () => {
  box = cliSandbox();
  config({ endpoints: { hooks: ENDPOINT() } });
  const store = await openStore(join(box.cwd, 'onceq.db'));
  await enqueue(store, nEvents(2).jsonl);
  await work(store, (_payload, context) => ({
    deliver: [{ to: 'hooks', body: { id: context.eventId } }],
  }));
  await store.close();
  const env = { HOOKS_SECRET: SECRET };
  const endpoints = async () =>
    json<{ endpoints: { pending: number; disabled: { reason: string } | null }[] }>(
      await box.run(['deliveries', '--json']),
    ).endpoints;
  answerStatus = 410;
  requests = 0;
  const gone = await box.run(['deliver', '--until-idle', '--json'], { env });
  expect(gone.code).toBe(0);
  expect(json(gone)).toMatchObject({ delivered: 0, dead: 0 });
  expect(await endpoints()).toMatchObject([
    { endpoint: 'hooks', pending: 2, disabled: { reason: 'it answered 410 Gone' } },
  ]);
  expect((await box.run(['deliveries'])).stdout).toContain('disabled: it answered 410 Gone');
  // Disabled, it is sent nothing, even once the receiver is back.
  answerStatus = 200;
  const sentBefore = requests;
  const idle = await box.run(['deliver', '--until-idle', '--json'], { env });
  expect([idle.code, requests]).toEqual([0, sentBefore]);
  const enabled = await box.run(['deliveries', 'enable', 'hooks']);
  expect([enabled.code, enabled.stdout]).toEqual([
    0,
    'enabled hooks: its deliveries are sent again\n',
  ]);
  expect(await endpoints()).toMatchObject([{ pending: 2, disabled: null }]);
  expect(json(await box.run(['deliveries', 'enable', 'hooks', '--json']))).toEqual({
    endpoint: 'hooks',
    was_disabled: false,
  });
  const sent = await box.run(['deliver', '--until-idle', '--json'], { env });
  expect(json(sent)).toMatchObject({ delivered: 2, dead: 0 });
  expect(await endpoints()).toMatchObject([{ pending: 0, delivered: 2, disabled: null }]);
  expect((await box.run(['deliveries'])).stdout).not.toContain('disabled');
  for (const r of [gone, idle, enabled, sent])
    expect(r.stdout + r.stderr).not.toContain(SECRET.slice(6, 30));
});
