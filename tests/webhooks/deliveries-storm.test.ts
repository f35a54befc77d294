// The outbox under crashes, with real processes on loopback: `onceq deliver` senders
// SIGKILLed again and again, a receiver (its own process, its own verification of the
// Standard Webhooks signature, its own dedup on webhook-id) that answers 500s, late
// answers, slow answers and reset connections at random (seeded), SIGKILLed and
// restarted too. Afterwards every delivery is in the receiver's records exactly once,
// with the body the handler declared, none is dead, and every signature verified. On
// SQLite and on PostgreSQL, two senders at a time.
import { afterEach, describe, expect, test } from 'bun:test';
import { enqueue, type Handler, work } from '@onceq/core';
import { deliveryCounts, listDeliveries } from '@onceq/core/webhooks';
import { onPostgres } from '../support/backends.ts';
import { nEvents } from '../support/factories.ts';
import {
  deliveriesByAttempts,
  processed,
  type Receiver,
  receiverFacts,
  receiverRequests,
  SENDER_STARTED,
  STORM_SECRET,
  startReceiver,
  startSender,
  stopWhenStarted,
  until,
  writeHooksConfig,
} from '../support/webhook-storm.ts';
import { type SharedStore, sharedStore, type WorkerProcess } from '../support/worker-process.ts';

const EVENTS = 30;
const SEED = 20_261_202;

/** Two deliveries per message: its amount to `hooks`, and a receipt under key `receipt`. */
const handler: Handler = (payload, context) => ({
  deliver: [
    { to: 'hooks', body: { event: context.eventId, cents: payload.amount_cents as number } },
    { to: 'hooks', body: `receipt for ${context.eventId}`, key: 'receipt' },
  ],
});

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
      writeHooksConfig(cwd, port);
      await enqueue(store, nEvents(EVENTS).jsonl);
      expect((await work(store, handler)).done).toBe(EVENTS);
      const expected = new Map<string, string>();
      for (let n = 1; n <= EVENTS; n++) {
        const event = `E${String(n).padStart(4, '0')}`;
        expected.set(`${event}:1`, JSON.stringify({ event, cents: n * 100 }));
        expected.set(`${event}:receipt`, `receipt for ${event}`);
      }
      expect((await listDeliveries(store)).map((d) => d.webhookId).sort()).toEqual(
        [...expected.keys()].sort(),
      );

      const sender = () => {
        const p = startSender(db, cwd);
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
        expect(await stopWhenStarted(p, SENDER_STARTED)).toBe(0);
        expect(p.stderr() + p.stdout()).not.toContain(STORM_SECRET.slice(6, 30));
      }

      expect(receiverFacts(dir, expected)).toEqual({
        twice: [],
        missing: [],
        unexpected: [],
        changed: [],
        badSignatures: 0,
      });
      const [hooks] = await deliveryCounts(store);
      expect(hooks?.states).toEqual({ pending: 0, leased: 0, delivered: expected.size, dead: 0 });
      const requests = receiverRequests(dir).length;
      console.log(
        `${backend}: ${expected.size} deliveries, ${requests} requests, ${kills} sender kills; deliveries by attempts: ${JSON.stringify(await deliveriesByAttempts(store))}`,
      );
      expect(requests).toBeGreaterThan(expected.size);
    }, 180_000);
  });
}

storm('sqlite');
onPostgres('deliveries storm', () => storm('postgres'));
