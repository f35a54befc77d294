/**
 * Webhooks on SQLite (synchronous FULL): `onceq serve` as its own process taking signed
 * requests from concurrent senders on loopback (group commit at work), and the sender
 * delivering an outbox to a receiver process on loopback, in one process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, type Handler, openStore, setIdPolicy, work } from '@onceq/core';
import { sendDeliveries } from '@onceq/core/webhooks';
import { batches, percentile } from '../util.ts';
import type { SenderResult, SenderSpec } from './webhook-senders.ts';

const BIN = join(import.meta.dir, '..', '..', '..', 'cli', 'src', 'bin.ts');
const SECRET = `whsec_${Buffer.from('bench secret, thirty-two bytes!!').toString('base64')}`;

export interface ServeRun {
  server: 'onceq serve' | 'bare';
  requests: number;
  senders: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** The server process's CPU time per request (user + system), in microseconds. */
  serverCpuUs: number;
}

const SENDERS_CHILD = join(import.meta.dir, 'webhook-senders.ts');
const BARE_CHILD = join(import.meta.dir, 'bare-ingest.ts');
/** Sender processes: the senders are spread over them so no one client process is the limit. */
const SENDER_PROCESSES = 4;

/** A process's CPU time so far (user + system), in ms, from /proc; null where there is none. */
function cpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** Reads lines from a child's stdout. */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      yield buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
    }
  }
  if (buffer !== '') yield buffer;
}

/** Starts the server of `kind` on a fresh store in `dir`; resolves with its process and port. */
async function startServer(
  dir: string,
  kind: ServeRun['server'],
): Promise<{ proc: Bun.Subprocess<'ignore', 'pipe', 'inherit'>; port: number }> {
  const db = join(dir, 'serve.db');
  const env = { ...process.env, BENCH_SECRET: SECRET };
  let command: string[];
  if (kind === 'bare') command = ['bun', BARE_CHILD, db];
  else {
    const store = await openStore(db);
    await setIdPolicy(store, { kind: 'general' });
    await store.close();
    writeFileSync(
      join(dir, 'onceq.config.json'),
      JSON.stringify({
        sources: {
          bench: { path: '/in', verify: 'standard-webhooks', secret_env: 'BENCH_SECRET' },
        },
      }),
    );
    command = ['bun', BIN, 'serve', '--db', db, '--port', '0', '--json'];
  }
  const proc = Bun.spawn(command, { cwd: dir, env, stdout: 'pipe', stderr: 'inherit' });
  for await (const line of lines(proc.stdout)) {
    const { url } = JSON.parse(line) as { url: string };
    return { proc, port: Number(new URL(url).port) };
  }
  throw new Error(`${kind} exited before listening`);
}

/**
 * `requests` signed webhooks from `senders` concurrent senders (keep-alive connections
 * spread over {@link SENDER_PROCESSES} processes, requests signed before the clock
 * starts) to a fresh `onceq serve`, or to the bare baseline, on SQLite FULL.
 */
export async function runServe(
  dir: string,
  requests: number,
  senders: number,
  kind: ServeRun['server'] = 'onceq serve',
): Promise<ServeRun> {
  const { proc, port } = await startServer(dir, kind);
  try {
    const share = Math.ceil(requests / SENDER_PROCESSES);
    const children = Array.from({ length: SENDER_PROCESSES }, (_, k) => {
      const spec: SenderSpec = {
        port,
        path: '/in',
        from: k * share,
        count: Math.min(share, requests - k * share),
        senders: senders / SENDER_PROCESSES,
        secret: SECRET,
      };
      return Bun.spawn(['bun', SENDERS_CHILD, JSON.stringify(spec)], {
        stdin: 'pipe',
        stdout: 'pipe',
        stderr: 'inherit',
        env: { ...process.env },
      });
    });
    const outputs = children.map((c) => lines(c.stdout));
    for (const out of outputs) {
      const { value } = await out.next();
      if (value !== 'ready') throw new Error('a sender process did not start');
    }
    const cpuBefore = cpuMs(proc.pid);
    const started = performance.now();
    for (const c of children) {
      c.stdin.write('go\n');
      c.stdin.end();
    }
    const results = await Promise.all(
      outputs.map(async (out) => JSON.parse((await out.next()).value as string) as SenderResult),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = cpuMs(proc.pid);
    for (const r of results) {
      if (r.error !== undefined || r.failed > 0) {
        throw new Error(`${kind}: ${r.failed} requests failed ${r.error ?? ''}`);
      }
    }
    const latencies = results.flatMap((r) => r.latencies);
    return {
      server: kind,
      requests,
      senders,
      perSecond: latencies.length / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      serverCpuUs:
        cpuBefore === null || cpuAfter === null
          ? Number.NaN
          : ((cpuAfter - cpuBefore) * 1000) / latencies.length,
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
