// The outbox under crashes, with real processes on loopback: `onceq deliver` senders
// SIGKILLed again and again, a receiver (its own process, its own verification of the
// Standard Webhooks signature, its own dedup on webhook-id) that answers 500s, late
// answers, slow answers and reset connections at random (seeded), SIGKILLed and
// restarted too. Afterwards every delivery is in the receiver's records exactly once,
// with the body the handler declared, none is dead, and every signature verified. On
// SQLite and on PostgreSQL, two senders at a time.
import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, type Handler, work } from '@onceq/core';
import { deliveryCounts, listDeliveries } from '@onceq/core/webhooks';
import { onPostgres } from '../support/backends.ts';
import { nEvents } from '../support/factories.ts';
import {
  type SharedStore,
  sharedStore,
  startOnceq,
  type WorkerProcess,
} from '../support/worker-process.ts';

const RECEIVER = join(import.meta.dir, '..', 'support', 'webhook-receiver.ts');
const SECRET = `whsec_${Buffer.from('storm secret, thirty-two bytes!!').toString('base64')}`;
const EVENTS = 30;
const SEED = 20_261_202;

/** Two deliveries per message: its amount to `hooks`, and a receipt under key `receipt`. */
const handler: Handler = (payload, context) => ({
  deliver: [
    { to: 'hooks', body: { event: context.eventId, cents: payload.amount_cents as number } },
    { to: 'hooks', body: `receipt for ${context.eventId}`, key: 'receipt' },
  ],
});

interface Receiver {
  proc: ReturnType<typeof Bun.spawn>;
  port: number;
}

async function startReceiver(dir: string, port: number, seed: number): Promise<Receiver> {
  const options = { port, secret: SECRET, seed, faults: 0.4, hangMs: 1500, dir };
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

function processed(dir: string): { id: string; body: string }[] {
  try {
    return readFileSync(join(dir, 'processed.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { id: string; body: string });
  } catch {
    return [];
  }
}

/** Waits (bounded) until `condition` holds, polling; never a fixed sleep. */
async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

function storm(backend: 'sqlite' | 'postgres') {
  describe(`${backend}: deliveries survive killed senders and a faulty, restarted receiver`, () => {
    let shared: SharedStore | undefined;
    const running: WorkerProcess[] = [];
    let receiver: Receiver | undefined;
    afterEach(async () => {
      for (const p of running.splice(0)) {
        p.signal('SIGTERM');
        await p.exited(5000);
      }
      receiver?.proc.kill('SIGKILL');
      await shared?.cleanup();
    });

    test('every delivery reaches the receiver exactly once after its dedup, none lost or dead', async () => {
      shared = await sharedStore(backend);
      const { store, cwd, db } = shared;
      const dir = cwd;
      receiver = await startReceiver(dir, 0, SEED);
      const port = receiver.port;
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
      await enqueue(store, nEvents(EVENTS).jsonl);
      expect((await work(store, handler)).done).toBe(EVENTS);
      const expected = new Map<string, string>();
      for (const d of await listDeliveries(store)) expected.set(d.webhookId, '');
      expect(expected.size).toBe(EVENTS * 2);

      const sender = () => {
        // --metrics-port: its line on stderr says the sender's stop handlers are in place.
        const p = startOnceq(
          ['deliver', '--db', db, '--lease', '2', '--json', '--metrics-port', '0'],
          cwd,
          {
            HOOKS_SECRET: SECRET,
          },
        );
        running.push(p);
        return p;
      };
      sender();
      sender();
      // Kill a sender each time the receiver has processed a few more, four times; restart
      // the receiver (same port, same records) after the second kill.
      let kills = 0;
      while (kills < 4) {
        const seen = processed(dir).length;
        if (seen >= expected.size) break;
        await until(() => processed(dir).length >= Math.min(expected.size, seen + 8), 'progress');
        const victim = running.splice(kills % running.length, 1)[0] as WorkerProcess;
        process.kill(victim.pid, 'SIGKILL');
        await victim.exited();
        sender();
        kills += 1;
        if (kills === 2) {
          receiver.proc.kill('SIGKILL');
          await receiver.proc.exited;
          receiver = await startReceiver(dir, port, SEED + 1);
        }
      }
      await until(
        async () => {
          const [hooks] = await deliveryCounts(store);
          return hooks?.states.delivered === expected.size;
        },
        'every delivery recorded as delivered',
        90_000,
      );
      for (const p of running.splice(0)) {
        // A sender started after the last kill may still be starting: SIGTERM then would
        // end it before it could stop gracefully. Wait for its handlers first.
        await until(() => p.stderr().includes('serving /metrics'), 'the sender is running');
        p.signal('SIGTERM');
        expect(await p.exited()).toBe(0);
        expect(p.stderr() + p.stdout()).not.toContain(SECRET.slice(6, 30));
      }

      const records = processed(dir);
      const ids = records.map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(ids)).toEqual(new Set(expected.keys()));
      for (const r of records) {
        const [event, key] = r.id.split(':') as [string, string];
        const cents = Number(event.slice(1)) * 100;
        expect(r.body).toBe(
          key === 'receipt' ? `receipt for ${event}` : JSON.stringify({ event, cents }),
        );
      }
      const requests = readFileSync(join(dir, 'requests.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { id: string; ok: boolean });
      expect(requests.filter((r) => !r.ok)).toEqual([]);
      const [hooks] = await deliveryCounts(store);
      expect(hooks?.states).toEqual({ pending: 0, leased: 0, delivered: expected.size, dead: 0 });
      // Attempts per delivery, as the store logged them (a killed sender's attempt is not logged).
      const perDelivery = new Map<number, number>();
      for (const d of await listDeliveries(store)) {
        perDelivery.set(d.attempts, (perDelivery.get(d.attempts) ?? 0) + 1);
      }
      console.log(
        `${backend}: ${expected.size} deliveries, ${requests.length} requests, ${kills} sender kills; deliveries by attempts: ${JSON.stringify(Object.fromEntries([...perDelivery].sort((a, b) => a[0] - b[0])))}`,
      );
      expect(requests.length).toBeGreaterThan(expected.size);
    }, 180_000);
  });
}

storm('sqlite');
onPostgres('deliveries storm', () => storm('postgres'));
