// Per-key order of deliveries on both backends, on the model clock: deliveries of
// messages that share an ordering key go to one endpoint one at a time, in the order of
// their messages (and, within a message, of their keys), while deliveries without a key
// go out beside them. A retrying or dead delivery holds its key's later ones back;
// another endpoint's deliveries of the same key are not held.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { enqueue, type Handler, type Store, work } from '@onceq/core';
import { HELD_RECHECK_SECONDS } from '@onceq/core/internal';
import {
  type DeliveryEndpoint,
  listDeliveries,
  redriveDeliveries,
  sendDeliveries,
} from '@onceq/core/webhooks';
import { freshStore } from '../conformance/harness.ts';
import { forEachBackend } from '../support/backends.ts';
import { batch, line, paid } from '../support/factories.ts';
import { serveOnLoopback } from '../support/loopback-server.ts';

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

/** Requests in the order the receiver got them; the most keyed requests it held at once. */
let received: string[] = [];
let open = 0;
let mostOpen = 0;
let answer: (id: string, nth: number) => number = () => 200;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = serveOnLoopback(async (request) => {
    const id = request.headers.get('webhook-id') ?? '';
    const keyed = isKeyed(id);
    received.push(id);
    if (keyed) mostOpen = Math.max(mostOpen, ++open);
    // Let other requests in flight arrive before this one is answered.
    await request.text();
    await new Promise((resolve) => setImmediate(resolve));
    if (keyed) open -= 1;
    const status = answer(id, received.filter((x) => x === id).length);
    return new Response(status === 200 ? 'ok' : 'no', { status });
  });
});
afterAll(() => server.stop(true));

function endpoint(name: string): DeliveryEndpoint {
  return {
    name,
    url: `http://127.0.0.1:${server.port}/${name}`,
    secrets: [SECRET],
    timeoutMs: 2000,
    schedule: [0, 5],
    concurrency: 8,
  };
}

/** Each message delivers twice to `hooks` (keys 1 and 2) and once to `audit`. */
const delivering: Handler = (_payload, context) => ({
  deliver: [
    { to: 'hooks', body: { event: context.eventId, n: 1 } },
    { to: 'hooks', body: { event: context.eventId, n: 2 } },
    { to: 'audit', body: { event: context.eventId } },
  ],
});

/** Events E{from}, E{from + 1} … (keyed ones from E0001, keyless ones from E0101). */
const events = (from: number, n: number) =>
  batch(
    ...Array.from({ length: n }, (_, i) =>
      line(`E${String(from + i).padStart(4, '0')}`, paid('book', 100)),
    ),
  );
/**
 * Works until `n` messages are done: a key's next message becomes ready as the one
 * before it is done, which one `work` call may not wait for.
 */
async function workAll(store: Store, n: number): Promise<number> {
  let done = 0;
  for (let round = 0; round < n && done < n; round++) {
    done += (await work(store, delivering)).done;
  }
  return done;
}

const isKeyed = (id: string) => id.startsWith('E000');

forEachBackend('delivery order', (factory) => {
  describe(`${factory.name}: per-key order of deliveries`, () => {
    const env = freshStore(factory);

    test('a key goes to one endpoint one at a time, in order; a retry holds it; keyless ones pass', async () => {
      const { store, clock } = env();
      received = [];
      mostOpen = 0;
      // E0001's first delivery fails once: E0001:2 and all of E0002 and E0003 wait behind it.
      answer = (id, nth) => (id === 'E0001:1' && nth === 1 ? 500 : 200);
      await enqueue(store, events(1, 3), { key: 'customer-7' });
      await enqueue(store, events(101, 3));
      expect(await workAll(store, 6)).toBe(6);
      const endpoints = [endpoint('hooks')];

      await sendDeliveries(store, { endpoints, untilIdle: true });
      expect(received.filter(isKeyed)).toEqual(['E0001:1']);
      expect(received.filter((id) => !isKeyed(id)).sort()).toEqual([
        'E0101:1',
        'E0101:2',
        'E0102:1',
        'E0102:2',
        'E0103:1',
        'E0103:2',
      ]);

      clock.advance(5);
      await sendDeliveries(store, { endpoints, untilIdle: true });
      expect(received.filter(isKeyed)).toEqual([
        'E0001:1',
        'E0001:1',
        'E0001:2',
        'E0002:1',
        'E0002:2',
        'E0003:1',
        'E0003:2',
      ]);
      expect(mostOpen).toBe(1);
      const hooks = await listDeliveries(store, { endpoint: 'hooks' });
      expect(hooks.every((d) => d.state === 'delivered')).toBe(true);
    });

    test('a delivery waiting for its key is set aside, not read at every claim; the one before it being delivered releases it', async () => {
      const { store, clock } = env();
      received = [];
      // E0001:1 fails until told otherwise: everything of the key waits behind it.
      let failing = true;
      answer = (id) => (id === 'E0001:1' && failing ? 500 : 200);
      await enqueue(store, events(1, 3), { key: 'customer-9' });
      expect(await workAll(store, 3)).toBe(3);
      const endpoints = [{ ...endpoint('hooks'), schedule: [0, 5, 5, 5] }];
      const heldUntil = async () =>
        Object.fromEntries(
          (await listDeliveries(store, { endpoint: 'hooks', state: 'pending' })).map((d) => [
            d.webhookId,
            d.availableAt,
          ]),
        );

      const first = clock();
      await sendDeliveries(store, { endpoints, untilIdle: true });
      // Each waiting delivery was read once and set aside until the look again; the
      // failed one waits for its retry.
      const aside = first + HELD_RECHECK_SECONDS;
      expect(await heldUntil()).toEqual({
        'E0001:1': first + 5,
        'E0001:2': aside,
        'E0002:1': aside,
        'E0002:2': aside,
        'E0003:1': aside,
        'E0003:2': aside,
      });
      // The retry fails again: the claims that lease it read none of the set-aside ones,
      // which keep the time they were set aside until.
      clock.advance(5);
      await sendDeliveries(store, { endpoints, untilIdle: true });
      expect(await heldUntil()).toMatchObject({ 'E0002:2': aside, 'E0003:2': aside });
      expect(received.filter(isKeyed)).toEqual(['E0001:1', 'E0001:1']);

      // Delivered at last: each one releases the next at once, long before the look again.
      failing = false;
      clock.advance(5);
      await sendDeliveries(store, { endpoints, untilIdle: true });
      expect(clock()).toBeLessThan(aside);
      expect(received.filter(isKeyed)).toEqual([
        'E0001:1',
        'E0001:1',
        'E0001:1',
        'E0001:2',
        'E0002:1',
        'E0002:2',
        'E0003:1',
        'E0003:2',
      ]);
      expect(await heldUntil()).toEqual({});
    });

    test('a set-aside delivery is looked at again after a while: still blocked, it is set aside again', async () => {
      const { store, clock } = env();
      received = [];
      answer = (id) => (id === 'E0001:1' ? 500 : 200);
      await enqueue(store, events(1, 2), { key: 'customer-10' });
      expect(await workAll(store, 2)).toBe(2);
      const endpoints = [{ ...endpoint('hooks'), schedule: [0] }];
      await sendDeliveries(store, { endpoints, untilIdle: true });
      const dead = await listDeliveries(store, { endpoint: 'hooks', state: 'dead' });
      expect(dead.map((d) => d.webhookId)).toEqual(['E0001:1']);

      clock.advance(HELD_RECHECK_SECONDS);
      const again = clock();
      await sendDeliveries(store, { endpoints, untilIdle: true });
      const pending = await listDeliveries(store, { endpoint: 'hooks', state: 'pending' });
      expect(pending.map((d) => [d.webhookId, d.availableAt])).toEqual([
        ['E0001:2', again + HELD_RECHECK_SECONDS],
        ['E0002:1', again + HELD_RECHECK_SECONDS],
        ['E0002:2', again + HELD_RECHECK_SECONDS],
      ]);
      expect(received.filter(isKeyed)).toEqual(['E0001:1']);
    });

    test('a dead delivery blocks its key on its endpoint until redriven; other endpoints go on', async () => {
      const { store, clock } = env();
      received = [];
      answer = (id) => (id === 'E0001:2' ? 500 : 200);
      await enqueue(store, events(1, 2), { key: 'customer-8' });
      expect(await workAll(store, 2)).toBe(2);
      const endpoints = [endpoint('hooks'), endpoint('audit')];
      await sendDeliveries(store, { endpoints, untilIdle: true });
      clock.advance(5);
      await sendDeliveries(store, { endpoints, untilIdle: true });
      const hooks = await listDeliveries(store, { endpoint: 'hooks' });
      expect(hooks.map((d) => [d.webhookId, d.state])).toEqual([
        ['E0001:1', 'delivered'],
        ['E0001:2', 'dead'],
        ['E0002:1', 'pending'],
        ['E0002:2', 'pending'],
      ]);
      // `audit`'s deliveries of the same key are not held by `hooks`' dead one.
      const audit = await listDeliveries(store, { endpoint: 'audit' });
      expect(audit.map((d) => d.state)).toEqual(['delivered', 'delivered']);

      answer = () => 200;
      await redriveDeliveries(store, ['E0001:2']);
      await sendDeliveries(store, { endpoints, untilIdle: true });
      expect(received.filter((id) => /^E000.:[12]$/.test(id))).toEqual([
        'E0001:1',
        'E0001:2',
        'E0001:2',
        'E0001:2',
        'E0002:1',
        'E0002:2',
      ]);
    });
  });
});
