/**
 * The outbox storms' shared pieces (tests/webhooks/deliveries-storm.test.ts, senders
 * killed; tests/webhooks/deliveries-worker-storm.test.ts, workers killed): the chaotic
 * receiver of webhook-receiver.ts as a process, what it recorded, the endpoint `hooks`
 * of onceq.config.json, `onceq deliver` senders, a bounded wait, and the attempts per
 * delivery as the store logged them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@onceq/core';
import { listDeliveries } from '@onceq/core/webhooks';
import { startOnceq, type WorkerProcess } from './worker-process.ts';

const RECEIVER = join(import.meta.dir, 'webhook-receiver.ts');

/** The `whsec_` secret of the endpoint `hooks`, given to senders as `HOOKS_SECRET`. */
export const STORM_SECRET = `whsec_${Buffer.from('storm secret, thirty-two bytes!!').toString('base64')}`;

export interface Receiver {
  proc: ReturnType<typeof Bun.spawn>;
  port: number;
}

/**
 * Starts the receiver on `port` (0 picks one) with its records in `dir`: 40 % of its
 * answers misbehave (seeded by `seed`), a late one after 1.5 s.
 */
export async function startReceiver(dir: string, port: number, seed: number): Promise<Receiver> {
  const options = { port, secret: STORM_SECRET, seed, faults: 0.4, hangMs: 1500, dir };
  const proc = Bun.spawn(['bun', RECEIVER, JSON.stringify(options)], {
    env: { ...process.env },
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const line = new TextDecoder().decode(value ?? new Uint8Array());
  if (!line.includes('port')) throw new Error(`the receiver did not start: ${line}`);
  return { proc, port: (JSON.parse(line) as { port: number }).port };
}

function jsonLines<T>(path: string): T[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as T);
  } catch {
    return [];
  }
}

/** What the receiver processed after its dedup: one entry per first delivery of a webhook-id. */
export function processed(dir: string): { id: string; body: string }[] {
  return jsonLines(join(dir, 'processed.jsonl'));
}

/** Every request the receiver got: its webhook-id and whether its signature verified. */
export function receiverRequests(dir: string): { id: string; ok: boolean }[] {
  return jsonLines(join(dir, 'requests.jsonl'));
}

/**
 * What the receiver's records show against `expected` (webhook-id → the declared body):
 * all empty and zero when every delivery was processed exactly once with its body.
 */
export function receiverFacts(dir: string, expected: ReadonlyMap<string, string>) {
  const records = processed(dir);
  const seen = new Set<string>();
  const twice: string[] = [];
  const changed: string[] = [];
  for (const r of records) {
    if (seen.has(r.id)) twice.push(r.id);
    seen.add(r.id);
    const body = expected.get(r.id);
    if (body !== undefined && body !== r.body) changed.push(`${r.id}: ${r.body}`);
  }
  return {
    twice,
    missing: [...expected.keys()].filter((id) => !seen.has(id)),
    unexpected: [...seen].filter((id) => !expected.has(id)),
    changed,
    badSignatures: receiverRequests(dir).filter((r) => !r.ok).length,
  };
}

/** Waits (bounded) until `condition` holds, polling; never a fixed sleep. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/**
 * Writes `cwd`'s onceq.config.json: the endpoint `hooks` on the receiver's `port`, a
 * 0.5 s timeout (a late answer is a retry), 20 attempts a second apart, 4 in flight.
 */
export function writeHooksConfig(cwd: string, port: number): void {
  writeFileSync(
    join(cwd, 'onceq.config.json'),
    JSON.stringify({
      endpoints: {
        hooks: {
          url: `http://127.0.0.1:${port}/hooks`,
          secret_env: 'HOOKS_SECRET',
          timeout_seconds: 0.5,
          retry_schedule: [0, ...Array.from({ length: 19 }, () => 1)],
          concurrency: 4,
        },
      },
    }),
  );
}

/** What a sender logs once its stop handlers are in place (its metrics listener is up). */
export const SENDER_STARTED = /serving \/metrics/;

/** `onceq deliver` on `db` from `cwd`, with 2 s leases. */
export function startSender(db: string, cwd: string): WorkerProcess {
  return startOnceq(['deliver', '--db', db, '--lease', '2', '--json', '--metrics-port', '0'], cwd, {
    HOOKS_SECRET: STORM_SECRET,
  });
}

/**
 * Stops `p` with SIGTERM once it logged `started` (a process still starting has no stop
 * handler yet: SIGTERM would end it before it could stop gracefully); its exit code.
 */
export async function stopWhenStarted(p: WorkerProcess, started: RegExp): Promise<number> {
  await p.waitForLog(started, 60_000);
  p.signal('SIGTERM');
  return p.exited(60_000);
}

/** How many deliveries took how many attempts, as the store logged them (a killed sender's attempt is not logged). */
export async function deliveriesByAttempts(store: Store): Promise<Record<number, number>> {
  const counts = new Map<number, number>();
  for (const d of await listDeliveries(store))
    counts.set(d.attempts, (counts.get(d.attempts) ?? 0) + 1);
  return Object.fromEntries([...counts].sort((a, b) => a[0] - b[0]));
}
