// The outbox under killed workers, with real processes on loopback: `onceq worker`
// processes run tests/support/handlers/delivering.ts, which declares one delivery per
// message (a JSON object, or a receipt under a key of its own), and are SIGKILLed
// mid-handler again and again while batches arrive; `onceq deliver` senders, one of them
// SIGKILLed now and then too, send to the chaotic receiver of webhook-receiver.ts. Two
// workers on SQLite, four on PostgreSQL (sharing messages and deliveries through SKIP
// LOCKED). Afterwards every message is done; the store holds exactly the declared
// delivery of each, with its body; the receiver processed each exactly once after its
// dedup, with that body, and every signature verified.
import { afterEach, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { enqueue, status } from '@onceq/core';
import { deliveryCounts } from '@onceq/core/webhooks';
import { onPostgres } from '../support/backends.ts';
import { batch, eventId, line, paid } from '../support/factories.ts';
import { declaredDelivery } from '../support/handlers/delivering.ts';
import { type StoreReader, storeReader } from '../support/ordered-storm.ts';
import { traceLines } from '../support/storm.ts';
import {
  deliveriesByAttempts,
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
import {
  type SharedStore,
  sharedStore,
  startWorker,
  type WorkerProcess,
} from '../support/worker-process.ts';

const DELIVERING = join(import.meta.dir, '..', 'support', 'handlers', 'delivering.ts');
const WORKER_STARTED = /worker started/;
/**
 * Short leases, so a killed worker's messages come back soon; attempts enough that no
 * message goes dead of the kills; a few messages per claim, so a kill strands leases.
 */
const WORKER_FLAGS = ['--handler', DELIVERING, '--lease', '2', '--attempts', '100', '--batch', '4'];
const SEED = 20_261_203;
const CATEGORIES = ['book', 'pen', 'bag'] as const;

/** Workers at a time, and rounds: each enqueues a batch and kills a worker mid-handler (every second one a sender too). */
const PLANS = {
  sqlite: { workers: 2, rounds: 5, perRound: 16 },
  postgres: { workers: 4, rounds: 6, perRound: 16 },
} as const;

/** The payload of event number `n`. */
function payloadOf(n: number) {
  return paid(CATEGORIES[n % CATEGORIES.length] as string, 100 * n) as {
    category: string;
    amount_cents: number;
  };
}

/** The webhook-id and body text of the delivery event `n` declares (the handler's own rule). */
function expectedDelivery(n: number): [string, string] {
  const { key, body } = declaredDelivery(eventId(n), payloadOf(n));
  return [`${eventId(n)}:${key ?? '1'}`, typeof body === 'string' ? body : JSON.stringify(body)];
}

/** Whether `worker` is inside a handler now: it then holds that message's lease. */
function midHandler(worker: WorkerProcess): boolean {
  const text = worker.stderr();
  const count = (pattern: RegExp) => text.match(pattern)?.length ?? 0;
  return count(/^handling E\d+$/gm) > count(/^handled E\d+$/gm);
}

async function count(reader: StoreReader, table: string, where: string): Promise<number> {
  const [row] = await reader.rows(
    `SELECT count(*) AS n FROM ${reader.table(table)} WHERE ${where}`,
  );
  return Number(row?.n ?? 0);
}

function storm(backend: 'sqlite' | 'postgres') {
  const plan = PLANS[backend];
  describe(`${backend}: deliveries written with the ACKs of killed workers`, () => {
    let shared: SharedStore | undefined;
    let reader: StoreReader | undefined;
    let receiver: Receiver | undefined;
    const started: WorkerProcess[] = [];
    afterEach(async () => {
      for (const p of started.splice(0)) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
        await p.exited(5000);
      }
      receiver?.proc.kill('SIGKILL');
      await reader?.close();
      await shared?.cleanup();
    });

    test(`${plan.workers} workers killed mid-handler and replaced, senders too: every message done with exactly its declared delivery, received exactly once after dedup`, async () => {
      shared = await sharedStore(backend);
      const { store, cwd, db } = shared;
      reader = storeReader(backend, db);
      const r = reader;
      receiver = await startReceiver(cwd, 0, SEED);
      writeHooksConfig(cwd, receiver.port);
      const worker = () => {
        const p = startWorker(['--db', db, ...WORKER_FLAGS], cwd);
        started.push(p);
        return p;
      };
      const sender = () => {
        const p = startSender(db, cwd);
        started.push(p);
        return p;
      };
      const workers = Array.from({ length: plan.workers }, worker);
      const senders = [sender(), sender()];
      for (const p of workers) await p.waitForLog(WORKER_STARTED, 60_000);
      for (const p of senders) await p.waitForLog(SENDER_STARTED, 60_000);

      let enqueued = 0;
      const enqueueMore = async (n: number) => {
        const lines = Array.from({ length: n }, (_, i) =>
          line(eventId(enqueued + i + 1), payloadOf(enqueued + i + 1)),
        );
        expect(await enqueue(store, batch(...lines))).toEqual({ accepted: n, duplicates: 0 });
        enqueued += n;
      };
      let workerKills = 0;
      let senderKills = 0;
      let senderKillsAtLiveLeases = 0;
      for (let round = 0; round < plan.rounds; round++) {
        await enqueueMore(plan.perRound);
        // A worker inside a handler. Should the workers finish the batch unseen (a fast
        // machine), another batch comes, a few times at most.
        let victim: WorkerProcess | undefined;
        for (let more = 0; victim === undefined; more++) {
          await until(async () => {
            victim = workers.find(midHandler);
            return (
              victim !== undefined || (await count(r, 'messages', "state = 'done'")) === enqueued
            );
          }, 'a worker inside a handler, or every message done');
          if (victim === undefined) {
            if (more === 3) throw new Error('the workers finished every batch before a kill');
            await enqueueMore(plan.perRound);
          }
        }
        process.kill(victim.pid, 'SIGKILL');
        expect(await victim.exited()).toBe(137);
        workerKills += 1;
        const replacement = worker();
        workers[workers.indexOf(victim)] = replacement;
        await replacement.waitForLog(WORKER_STARTED, 60_000);

        if (round % 2 === 1) {
          // A sender too, preferably while deliveries are leased (bounded: then anyway).
          let live = 0;
          await until(
            async () => {
              live = await count(r, 'deliveries', "state = 'leased'");
              return live > 0;
            },
            'a leased delivery',
            3000,
          ).catch(() => {});
          const slot = senderKills % senders.length;
          const killed = senders[slot] as WorkerProcess;
          process.kill(killed.pid, 'SIGKILL');
          expect(await killed.exited()).toBe(137);
          senderKills += 1;
          if (live > 0) senderKillsAtLiveLeases += 1;
          senders[slot] = sender();
          await senders[slot].waitForLog(SENDER_STARTED, 60_000);
        }
      }

      await until(
        async () => (await count(r, 'messages', "state = 'done'")) === enqueued,
        'every message done',
      );
      await until(
        async () => (await deliveryCounts(store))[0]?.states.delivered === enqueued,
        'every delivery recorded as delivered',
        90_000,
      );
      for (const p of workers) expect(await stopWhenStarted(p, WORKER_STARTED)).toBe(0);
      for (const p of senders) expect(await stopWhenStarted(p, SENDER_STARTED)).toBe(0);
      const output = started.map((p) => p.stderr() + p.stdout()).join('\n');
      expect(traceLines(output)).toBe(0);
      expect(output).not.toContain(STORM_SECRET.slice(6, 30));

      const expected = new Map(Array.from({ length: enqueued }, (_, i) => expectedDelivery(i + 1)));
      expect((await status(store)).messages).toEqual({
        ready: 0,
        leased: 0,
        done: enqueued,
        dead: 0,
      });
      // The store: the declared delivery of every message, each once, none of a message not done.
      const rows = await r.rows(
        `SELECT d.event_id, d.key, d.body, m.state FROM ${r.table('deliveries')} d
          LEFT JOIN ${r.table('messages')} m ON m.event_id = d.event_id ORDER BY d.event_id, d.key`,
      );
      const stored = rows.map((row) => [`${row.event_id}:${row.key}`, String(row.body)] as const);
      expect(new Set(stored.map(([id]) => id)).size).toBe(stored.length);
      expect(rows.filter((row) => row.state !== 'done')).toEqual([]);
      expect(Object.fromEntries(stored)).toEqual(Object.fromEntries(expected));
      // The receiver: each once after its dedup, with that body; every signature verified.
      expect(receiverFacts(cwd, expected)).toEqual({
        twice: [],
        missing: [],
        unexpected: [],
        changed: [],
        badSignatures: 0,
      });
      const [hooks] = await deliveryCounts(store);
      expect(hooks?.states).toEqual({ pending: 0, leased: 0, delivered: enqueued, dead: 0 });
      // The kills took leases: messages claimed again after their worker died.
      const retaken = await count(r, 'messages', 'attempts > 1');
      const requests = receiverRequests(cwd).length;
      console.log(
        `${backend}: ${enqueued} messages, ${plan.workers} workers, ${workerKills} worker kills (${retaken} messages claimed again), ${senderKills} sender kills (${senderKillsAtLiveLeases} at leased deliveries); ${expected.size} deliveries, ${requests} requests; deliveries by attempts: ${JSON.stringify(await deliveriesByAttempts(store))}`,
      );
      expect(workerKills).toBe(plan.rounds);
      expect(retaken).toBeGreaterThan(0);
    }, 180_000);
  });
}

storm('sqlite');
onPostgres('deliveries worker storm', () => storm('postgres'));
