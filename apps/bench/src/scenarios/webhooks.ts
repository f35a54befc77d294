/**
 * Webhooks on SQLite (synchronous FULL): `onceq serve` as its own process taking signed
 * requests from concurrent senders on loopback (group commit at work), and the sender
 * delivering an outbox to a receiver process on loopback, in one process.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, type Handler, openStore, setIdPolicy, work } from '@onceq/core';
import { sendDeliveries, signatureHeader } from '@onceq/core/webhooks';
import { batches, percentile } from '../util.ts';

const BIN = join(import.meta.dir, '..', '..', '..', 'cli', 'src', 'bin.ts');
const SECRET = `whsec_${Buffer.from('bench secret, thirty-two bytes!!').toString('base64')}`;
const KEY = new Uint8Array(Buffer.from(SECRET.slice(6), 'base64'));

export interface ServeRun {
  requests: number;
  senders: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** `requests` signed webhooks from `senders` concurrent loops to a fresh `onceq serve`. */
export async function runServe(dir: string, requests: number, senders: number): Promise<ServeRun> {
  const db = join(dir, 'serve.db');
  const store = await openStore(db);
  await setIdPolicy(store, { kind: 'general' });
  await store.close();
  writeFileSync(
    join(dir, 'onceq.config.json'),
    JSON.stringify({
      sources: { bench: { path: '/in', verify: 'standard-webhooks', secret_env: 'BENCH_SECRET' } },
    }),
  );
  const proc = Bun.spawn(['bun', BIN, 'serve', '--db', db, '--port', '0', '--json'], {
    cwd: dir,
    env: { ...process.env, BENCH_SECRET: SECRET },
    stdout: 'pipe',
    stderr: 'inherit',
  });
  try {
    const reader = proc.stdout.getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    const { url } = JSON.parse(new TextDecoder().decode(value)) as { url: string };
    const latencies: number[] = [];
    let next = 0;
    const timestamp = Math.floor(Date.now() / 1000);
    const sender = async () => {
      while (next < requests) {
        const i = next++;
        const id = `bench_${i}`;
        const body = `{"category":"book","amount_cents":${100 + (i % 900)},"n":${i}}`;
        const started = performance.now();
        const response = await fetch(`${url}/in`, {
          method: 'POST',
          headers: {
            'webhook-id': id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signatureHeader([KEY], id, timestamp, body),
          },
          body,
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`serve answered ${response.status}`);
        latencies.push(performance.now() - started);
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: senders }, sender));
    const seconds = (performance.now() - started) / 1000;
    return {
      requests,
      senders,
      perSecond: requests / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  } finally {
    proc.kill('SIGTERM');
    await proc.exited;
  }
}

export interface DeliverRun {
  deliveries: number;
  perSecond: number;
}

/** A receiver that answers 200 at once: what the sender costs, not what a receiver does. */
const RECEIVER = `const s = Bun.serve({ hostname: '127.0.0.1', port: 0, reusePort: false, development: false,
  fetch: async (r) => { await r.arrayBuffer(); return new Response('ok'); } }); console.log(s.port);`;

/** `messages` messages with one delivery each, sent by one sender (concurrency 64) to a receiver process. */
export async function runDeliver(dir: string, messages: number): Promise<DeliverRun> {
  const db = join(dir, 'deliver.db');
  const store = await openStore(db);
  const receiver = Bun.spawn(['bun', '-e', RECEIVER], { stdout: 'pipe', stderr: 'inherit' });
  try {
    for (const chunk of batches(messages)) await enqueue(store, chunk);
    const handler: Handler = (payload, context) => ({
      deliver: [
        { to: 'receiver', body: { event: context.eventId, cents: payload.amount_cents as number } },
      ],
    });
    await work(store, handler, { batch: 500 });
    const reader = receiver.stdout.getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    const port = Number(new TextDecoder().decode(value).trim());
    const started = performance.now();
    const summary = await sendDeliveries(store, {
      endpoints: [
        { name: 'receiver', url: `http://127.0.0.1:${port}/`, secrets: [SECRET], concurrency: 64 },
      ],
      untilIdle: true,
      onError: (e) => console.error(e),
    });
    const seconds = (performance.now() - started) / 1000;
    if (summary.delivered !== messages)
      throw new Error(`delivered ${summary.delivered} of ${messages}`);
    return { deliveries: messages, perSecond: messages / seconds };
  } finally {
    receiver.kill('SIGTERM');
    await receiver.exited;
    await store.close();
  }
}
