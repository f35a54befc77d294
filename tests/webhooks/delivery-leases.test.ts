// A delivery is leased and fenced like a message, in process on the model clock: a
// sender whose lease ran out during its attempt, while another sender leased the
// delivery again and recorded it, has its late outcome dropped and counted as lost
// (both backends); on PostgreSQL a claim skips a delivery row another transaction holds
// locked instead of waiting for it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { enqueue, type Handler, type Store, work } from '@onceq/core';
import {
  type DeliveryEndpoint,
  listDeliveries,
  type SenderSummary,
  sendDeliveries,
  showDelivery,
} from '@onceq/core/webhooks';
import { SQL } from 'bun';
import { freshStore } from '../conformance/harness.ts';
import { describePostgres, forEachBackend } from '../support/backends.ts';
import { nEvents, postgresFactory, T0, withFreshStore } from '../support/factories.ts';
import { serveOnLoopback } from '../support/loopback-server.ts';

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const LEASE_SECONDS = 30;

/** The webhook-ids the receiver got, in order, and how it answers each. */
let received: string[] = [];
let answer: (id: string, nth: number) => Response | Promise<Response> = () => new Response('ok');
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = serveOnLoopback(async (request) => {
    const id = request.headers.get('webhook-id') ?? '';
    await request.text();
    received.push(id);
    return answer(id, received.filter((x) => x === id).length);
  });
});
afterAll(() => server.stop(true));

/** `hooks` on the receiver; an attempt may wait up to 10 s (the tests hold one on purpose). */
function hooks(): DeliveryEndpoint {
  return {
    name: 'hooks',
    url: `http://127.0.0.1:${server.port}/hooks`,
    secrets: [SECRET],
    timeoutMs: 10_000,
    schedule: [0, 5, 300],
  };
}

const delivering: Handler = (_payload, context) => ({
  deliver: [{ to: 'hooks', body: { event: context.eventId } }],
});

function summary(counts: Partial<SenderSummary>): SenderSummary {
  return { delivered: 0, retried: 0, dead: 0, disabled: 0, lost: 0, ...counts };
}

/** A promise and the call that resolves it. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const done = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { done, fire };
}

/**
 * A sender on `store` with leases of {@link LEASE_SECONDS} that stops once idle. It
 * polls rarely: only its attempt's end wakes it, never a look for more work.
 */
function sender(store: Store): Promise<SenderSummary> {
  return sendDeliveries(store, {
    endpoints: [hooks()],
    leaseSeconds: LEASE_SECONDS,
    pollMs: 60_000,
    untilIdle: true,
  });
}

forEachBackend('delivery leases', (factory) => {
  describe(`${factory.name}: delivery leases`, () => {
    const env = freshStore(factory);

    test('an outcome that comes after its lease expired and another sender recorded the delivery is dropped and counted lost', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      received = [];
      // Sender A's attempt is held at the receiver until the test lets it answer 500.
      const [arrived, late] = [signal(), signal()];
      answer = async (_id, nth) => {
        if (nth > 1) return new Response('ok');
        arrived.fire();
        await late.done;
        return new Response('too late', { status: 500 });
      };
      try {
        const a = sender(store);
        await arrived.done;
        clock.advance(LEASE_SECONDS);
        expect(await sender(store)).toEqual(summary({ delivered: 1 }));
        late.fire();
        expect(await a).toEqual(summary({ retried: 1, lost: 1 }));
      } finally {
        late.fire();
        answer = () => new Response('ok');
      }
      expect(received).toEqual(['E0001:1', 'E0001:1']);
      // B's record stands: A's 500 changed nothing and is not in the attempt log.
      const shown = await showDelivery(store, 'E0001:1');
      expect(shown.delivery).toMatchObject({
        state: 'delivered',
        attempts: 2,
        lastStatus: 200,
        finishedAt: T0 + LEASE_SECONDS,
      });
      expect(shown.attempts.map((x) => [x.attempt, x.generation, x.status])).toEqual([[2, 2, 200]]);
    });

    test('an outcome that comes while another sender holds a newer lease is dropped; the newer lease records its own', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      received = [];
      // A's attempt answers 200 only once B's, under the newer lease, is in flight; B's
      // then answers 500.
      const [aArrived, aAnswers, bArrived, bAnswers] = [signal(), signal(), signal(), signal()];
      answer = async (_id, nth) => {
        if (nth === 1) {
          aArrived.fire();
          await aAnswers.done;
          return new Response('ok');
        }
        bArrived.fire();
        await bAnswers.done;
        return new Response('busy', { status: 500 });
      };
      try {
        const a = sender(store);
        await aArrived.done;
        clock.advance(LEASE_SECONDS);
        const b = sender(store);
        await bArrived.done;
        aAnswers.fire();
        // The row is still leased, at B's generation: A's delivered is not recorded.
        expect(await a).toEqual(summary({ delivered: 1, lost: 1 }));
        bAnswers.fire();
        expect(await b).toEqual(summary({ retried: 1 }));
      } finally {
        aAnswers.fire();
        bAnswers.fire();
        answer = () => new Response('ok');
      }
      const shown = await showDelivery(store, 'E0001:1');
      expect(shown.delivery).toMatchObject({
        state: 'pending',
        attempts: 2,
        lastStatus: 500,
        // B's was the second attempt: the retry waits the schedule's third delay.
        availableAt: T0 + LEASE_SECONDS + 300,
        finishedAt: null,
      });
      expect(shown.attempts.map((x) => [x.attempt, x.generation, x.status])).toEqual([[2, 2, 500]]);
    });
  });
});

describePostgres('PostgreSQL: delivery leases', () => {
  test('a claim skips a delivery row another transaction holds locked, and leases the others at once', async () => {
    await withFreshStore(postgresFactory, async ({ store, schema }) => {
      await enqueue(store, nEvents(3).jsonl);
      await work(store, delivering);
      received = [];
      // Another sender's claim in flight: E0002's delivery locked by an open transaction.
      const other = new SQL(process.env.DATABASE_URL as string);
      const [locked, released] = [signal(), signal()];
      const held = other.begin(async (tx) => {
        await tx.unsafe(`SELECT 1 FROM "${schema}".deliveries WHERE event_id = 'E0002' FOR UPDATE`);
        locked.fire();
        await released.done;
      });
      try {
        await locked.done;
        const sending = sendDeliveries(store, { endpoints: [hooks()], untilIdle: true });
        // Without SKIP LOCKED the claim waits for the lock, which is let go only below:
        // any bound tells the two apart, so a generous one.
        const bound = Bun.sleep(15_000).then(() => 'blocked' as const);
        const outcome = await Promise.race([sending, bound]);
        released.fire();
        await sending;
        expect(outcome).toEqual(summary({ delivered: 2 }));
        expect(received.sort()).toEqual(['E0001:1', 'E0003:1']);
        expect(
          (await listDeliveries(store)).map((d) => [d.webhookId, d.state, d.attempts]),
        ).toEqual([
          ['E0001:1', 'delivered', 1],
          ['E0002:1', 'pending', 0],
          ['E0003:1', 'delivered', 1],
        ]);
        // Once the lock is gone the next claim takes it.
        await held;
        await sendDeliveries(store, { endpoints: [hooks()], untilIdle: true });
        expect(received.sort()).toEqual(['E0001:1', 'E0002:1', 'E0003:1']);
      } finally {
        released.fire();
        await held.catch(() => {});
        await other.close();
      }
    });
  });
});
