// Webhooks out on both backends, on the model clock: deliveries are written with the
// ACK (and only with it), sent with Standard Webhooks headers under a webhook-id that is
// the same on every attempt, retried on the endpoint's schedule (Retry-After, timeouts,
// redirects), disabled by a 410, dead when the schedule is spent, and redriven. Bodies
// arrive byte for byte, non-ASCII text included, and every secret's signature is checked
// by the tests' own verifier, never core's. The receiver here is an in-process loopback
// server scripted per request; leases and fences are delivery-leases.test.ts, and the
// process and crash proofs deliveries-storm.test.ts (senders killed) and
// deliveries-worker-storm.test.ts (workers killed).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { enqueue, type Handler, LeaseLostError, show, work } from '@onceq/core';
import { claimMany, complete, resultOf } from '@onceq/core/internal';
import { WorkerMetrics } from '@onceq/core/metrics';
import {
  type AttemptLog,
  type DeliveryEndpoint,
  deliveryCounts,
  enableEndpoint,
  listDeliveries,
  redriveDeliveries,
  sendDeliveries,
  showDelivery,
} from '@onceq/core/webhooks';
import { freshStore } from '../conformance/harness.ts';
import { forEachBackend } from '../support/backends.ts';
import { nEvents, T0 } from '../support/factories.ts';
import { serveOnLoopback } from '../support/loopback-server.ts';
import { signedBy, v1Signature } from '../support/standard-webhooks.ts';

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.from('an older secret of thirty-two by').toString('base64')}`;

/** What the scripted receiver got: one entry per request. */
interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The body's bytes exactly as they arrived. */
  bytes: Uint8Array;
}

/** A loopback server that answers each request with what `answer` says for it. */
let received: Received[] = [];
let answer: (r: Received, nth: number) => Response | Promise<Response> = () => new Response('ok');
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = serveOnLoopback(async (request) => {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const r: Received = {
      id: request.headers.get('webhook-id') ?? '',
      timestamp: request.headers.get('webhook-timestamp') ?? '',
      signature: request.headers.get('webhook-signature') ?? '',
      body: new TextDecoder().decode(bytes),
      bytes,
    };
    received.push(r);
    return answer(r, received.filter((x) => x.id === r.id).length);
  });
});
afterAll(() => server.stop(true));

function endpoint(overrides: Partial<DeliveryEndpoint> = {}): DeliveryEndpoint {
  return {
    name: 'hooks',
    url: `http://127.0.0.1:${server.port}/in`,
    secrets: [SECRET, OLD_SECRET],
    timeoutMs: 2000,
    schedule: [0, 5, 300],
    ...overrides,
  };
}

/** Each message delivers its amount to `hooks` and a plain string to `audit` (key `audit`). */
const delivering: Handler = (payload, context) => ({
  deliver: [
    { to: 'hooks', body: { event: context.eventId, cents: payload.amount_cents as number } },
    { to: 'audit', body: 'plain text, sent as is', key: 'audit' },
  ],
});

forEachBackend('deliveries', (factory) => {
  describe(`${factory.name}: deliveries`, () => {
    const env = freshStore(factory);

    test('a done message has its deliveries, stored with the ACK; a lost lease writes none', async () => {
      const { store, clock } = env();
      await enqueue(store, nEvents(2).jsonl);
      const [stale] = await claimMany(store, { limit: 1, leaseSeconds: 2 });
      clock.advance(2);
      const [fresh] = await claimMany(store, { limit: 1 });
      if (stale === undefined || fresh === undefined) throw new Error('expected two claims');
      const declared = (id: string) => resultOf({ deliver: [{ to: 'hooks', body: { id } }] }, id);
      const old = await complete(store, [{ lease: stale, result: declared(stale.eventId) }]);
      expect(old.lost[0]).toBeInstanceOf(LeaseLostError);
      expect(await listDeliveries(store)).toEqual([]);
      await complete(store, [{ lease: fresh, result: declared(fresh.eventId) }]);
      await work(store, delivering);
      const all = await listDeliveries(store);
      expect(all.map((d) => [d.webhookId, d.endpoint, d.state, d.attempts])).toEqual([
        ['E0001:1', 'hooks', 'pending', 0],
        ['E0001:audit', 'audit', 'pending', 0],
        ['E0002:1', 'hooks', 'pending', 0],
      ]);
      // E0002's lease recorded the one delivery declared under it; E0001, whose stale
      // lease wrote nothing, got the worker's two.
      expect(fresh.eventId).toBe('E0002');
    });

    test('an attempt keeps the first 200 characters of the answer, blanked of control characters, declared length or streamed', async () => {
      const { store } = env();
      await enqueue(store, nEvents(3).jsonl);
      await work(store, (payload, context) => ({
        deliver: [{ to: 'hooks', body: { event: context.eventId, cents: payload.amount_cents } }],
      }));
      const streamed = () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 10; i++) controller.enqueue(Buffer.from('z'.repeat(100)));
            controller.close();
          },
        });
      const answers: Record<string, () => Response> = {
        'E0001:1': () => new Response(`a\nb${'x'.repeat(300)}`),
        'E0002:1': () => new Response('y'.repeat(5000)),
        'E0003:1': () => new Response(streamed()),
      };
      answer = (r) => answers[r.id]?.() ?? new Response('unexpected', { status: 500 });
      try {
        await sendDeliveries(store, { endpoints: [endpoint()], untilIdle: true });
      } finally {
        answer = () => new Response('ok');
      }
      const kept = [];
      for (const id of Object.keys(answers)) {
        const [attempt] = (await showDelivery(store, id)).attempts;
        kept.push([attempt?.status, attempt?.response]);
      }
      expect(kept).toEqual([
        [200, `a b${'x'.repeat(197)}`],
        [200, 'y'.repeat(200)],
        [200, 'z'.repeat(200)],
      ]);
    });

    test('a bad deliver fails its message as invalid_completion, naming the delivery', async () => {
      const { store } = env();
      await enqueue(store, nEvents(1).jsonl);
      await work(store, () => ({ deliver: [{ to: 'hooks', body: 1 }] }) as never);
      expect(await listDeliveries(store)).toEqual([]);
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'dead',
        lastErrorCode: 'invalid_completion',
        lastErrorDetail:
          "the completion's deliver[0].body must be a string or a plain JSON object or array",
      });
      const result = resultOf({ deliver: [{ to: 'a b', body: {} }] }, 'E0001');
      expect(result).toEqual({
        failure: {
          kind: 'permanent',
          code: 'invalid_completion',
          detail:
            "the completion's deliver[0].to must name a configured endpoint (1 to 64 letters, digits, _ or -)",
        },
      });
      expect(
        resultOf(
          {
            deliver: [
              { to: 'x', body: {}, key: 'k' },
              { to: 'y', body: {}, key: 'k' },
            ],
          },
          'E1',
        ),
      ).toMatchObject({
        failure: { detail: "the completion's deliver[1].key k is used twice in one message" },
      });
    });

    test('sent signed under one webhook-id, retried on the schedule after a 500, then delivered', async () => {
      const { store, clock } = env();
      received = [];
      answer = (_r, nth) =>
        new Response(nth === 1 ? 'busy' : 'ok', { status: nth === 1 ? 500 : 200 });
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      const logs: AttemptLog[] = [];
      await sendDeliveries(store, {
        endpoints: [endpoint()],
        untilIdle: true,
        onAttempt: (l) => logs.push(l),
      });
      expect(logs.map((l) => [l.webhookId, l.status, l.outcome])).toEqual([
        ['E0001:1', 500, 'retry'],
      ]);
      const [waiting] = await listDeliveries(store, { endpoint: 'hooks' });
      expect(waiting).toMatchObject({
        state: 'pending',
        attempts: 1,
        availableAt: T0 + 5,
        lastStatus: 500,
      });
      clock.advance(4);
      await sendDeliveries(store, { endpoints: [endpoint()], untilIdle: true });
      expect(received).toHaveLength(1);
      clock.advance(1);
      await sendDeliveries(store, { endpoints: [endpoint()], untilIdle: true });
      expect(received.map((r) => [r.id, r.timestamp])).toEqual([
        ['E0001:1', String(T0)],
        ['E0001:1', String(T0 + 5)],
      ]);
      for (const r of received) {
        expect(r.body).toBe('{"event":"E0001","cents":100}');
        // Signed with both secrets: each secret's signature is listed, verifies on its own,
        // and nothing else is listed.
        const each = [];
        for (const secret of [SECRET, OLD_SECRET]) {
          each.push(await v1Signature(secret, r.id, r.timestamp, r.bytes));
        }
        expect(r.signature.split(' ').sort()).toEqual(each.sort());
        expect(await signedBy(SECRET, 'E0001:2', r.timestamp, r.signature, r.bytes)).toBe(false);
      }
      const shown = await showDelivery(store, 'E0001:1');
      expect(shown.delivery).toMatchObject({ state: 'delivered', attempts: 2, finishedAt: T0 + 5 });
      expect(shown.attempts.map((a) => [a.attempt, a.at, a.status, a.response])).toEqual([
        [1, T0, 500, 'busy'],
        [2, T0 + 5, 200, 'ok'],
      ]);
      // `audit` is configured nowhere: its delivery waits, never attempted.
      expect(await listDeliveries(store, { endpoint: 'audit' })).toMatchObject([
        { state: 'pending', attempts: 0 },
      ]);
    });

    test('Retry-After on a 429 is honoured; a redirect and a timeout are failures under the same id', async () => {
      const { store, clock } = env();
      received = [];
      answer = async (_r, nth) => {
        if (nth === 1)
          return new Response('slow down', { status: 429, headers: { 'retry-after': '120' } });
        if (nth === 2)
          return new Response(null, { status: 302, headers: { location: 'http://127.0.0.1:1/' } });
        if (nth === 3) await Bun.sleep(1500);
        return new Response('ok');
      };
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      const ep = endpoint({ schedule: [0, 5, 5, 5, 5], timeoutMs: 300 });
      const logs: AttemptLog[] = [];
      const run = () =>
        sendDeliveries(store, { endpoints: [ep], untilIdle: true, onAttempt: (l) => logs.push(l) });
      await run();
      expect((await listDeliveries(store, { endpoint: 'hooks' }))[0]?.availableAt).toBe(T0 + 120);
      clock.advance(120);
      await run();
      clock.advance(5);
      await run();
      clock.advance(5);
      await run();
      expect(logs.map((l) => [l.attempt, l.status, l.outcome])).toEqual([
        [1, 429, 'retry'],
        [2, 302, 'retry'],
        [3, null, 'retry'],
        [4, 200, 'delivered'],
      ]);
      expect(logs[1]?.error).toBe('a redirect (302) is not a delivery');
      expect(logs[2]?.error).toBe('no answer within 300 ms (outcome unknown)');
      expect(new Set(received.map((r) => r.id))).toEqual(new Set(['E0001:1']));
    });

    test('Retry-After on a 503 is honoured, as seconds and as an HTTP date', async () => {
      const { store, clock } = env();
      received = [];
      // An HTTP date on the model clock: 600 s after the second attempt.
      const date = new Date((T0 + 90 + 600) * 1000).toUTCString();
      answer = (_r, nth) => {
        if (nth === 1)
          return new Response('busy', { status: 503, headers: { 'retry-after': '90' } });
        if (nth === 2)
          return new Response('busy', { status: 503, headers: { 'retry-after': date } });
        return new Response('ok');
      };
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      const ep = endpoint({ schedule: [0, 5, 5, 5] });
      const logs: AttemptLog[] = [];
      const run = () =>
        sendDeliveries(store, { endpoints: [ep], untilIdle: true, onAttempt: (l) => logs.push(l) });
      const availableAt = async () =>
        (await listDeliveries(store, { endpoint: 'hooks' }))[0]?.availableAt;
      await run();
      expect(await availableAt()).toBe(T0 + 90);
      clock.advance(89);
      await run();
      expect(received).toHaveLength(1);
      clock.advance(1);
      await run();
      expect(await availableAt()).toBe(T0 + 90 + 600);
      clock.advance(599);
      await run();
      expect(received).toHaveLength(2);
      clock.advance(1);
      await run();
      expect(logs.map((l) => [l.attempt, l.status, l.outcome])).toEqual([
        [1, 503, 'retry'],
        [2, 503, 'retry'],
        [3, 200, 'delivered'],
      ]);
      expect(received.map((r) => r.timestamp)).toEqual([T0, T0 + 90, T0 + 690].map(String));
    });

    test('non-ASCII bodies arrive byte for byte, and every signature over them verifies independently', async () => {
      const { store } = env();
      received = [];
      answer = () => new Response('ok');
      await enqueue(store, nEvents(1).jsonl);
      await work(store, (_payload, context) => ({
        deliver: [
          { to: 'hooks', body: { event: context.eventId, note: 'café ✓ 😀' } },
          { to: 'hooks', body: 'café ✓ 😀', key: 'text' },
        ],
      }));
      await sendDeliveries(store, { endpoints: [endpoint()], untilIdle: true });
      const byId = new Map(received.map((r) => [r.id, r]));
      expect([...byId.keys()].sort()).toEqual(['E0001:1', 'E0001:text']);
      // 'café ✓ 😀' in UTF-8, written out: é is 2 bytes, ✓ 3, 😀 4.
      const text = '636166c3a920e29c9320f09f9880';
      const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
      expect(hex(byId.get('E0001:text')?.bytes ?? new Uint8Array())).toBe(text);
      expect(hex(byId.get('E0001:1')?.bytes ?? new Uint8Array())).toBe(
        `${Buffer.from('{"event":"E0001","note":"').toString('hex')}${text}${Buffer.from('"}').toString('hex')}`,
      );
      for (const r of received) {
        for (const secret of [SECRET, OLD_SECRET]) {
          expect([r.id, await signedBy(secret, r.id, r.timestamp, r.signature, r.bytes)]).toEqual([
            r.id,
            true,
          ]);
        }
      }
    });

    test('a spent schedule makes the delivery dead; redrive sends it again under the same id', async () => {
      const { store, clock } = env();
      received = [];
      let failing = true;
      answer = () => new Response(failing ? 'no' : 'ok', { status: failing ? 503 : 200 });
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      const ep = endpoint({ schedule: [0, 1] });
      await sendDeliveries(store, { endpoints: [ep], untilIdle: true });
      clock.advance(1);
      await sendDeliveries(store, { endpoints: [ep], untilIdle: true });
      expect(await listDeliveries(store, { state: 'dead' })).toMatchObject([
        { webhookId: 'E0001:1', attempts: 2, lastStatus: 503, finishedAt: T0 + 1 },
      ]);
      const [counts] = (await deliveryCounts(store)).filter((c) => c.endpoint === 'hooks');
      expect(counts).toMatchObject({
        states: { pending: 0, leased: 0, delivered: 0, dead: 1 },
        attempts: 2,
      });
      await expect(redriveDeliveries(store, ['E0001:audit'])).rejects.toThrow(
        'delivery E0001:audit is pending, not dead: nothing was redriven',
      );
      failing = false;
      expect(await redriveDeliveries(store, ['E0001:1'])).toEqual(['E0001:1']);
      await sendDeliveries(store, { endpoints: [ep], untilIdle: true });
      expect(await listDeliveries(store, { endpoint: 'hooks' })).toMatchObject([
        { state: 'delivered', attempts: 1 },
      ]);
      expect(received.map((r) => r.id)).toEqual(['E0001:1', 'E0001:1', 'E0001:1']);
      expect((await showDelivery(store, 'E0001:1')).attempts.map((a) => a.attempt)).toEqual([
        1, 2, 1,
      ]);
    });

    test('a 410 disables the endpoint: its deliveries wait without spending attempts until it is enabled', async () => {
      const { store } = env();
      received = [];
      let gone = true;
      answer = () => new Response(gone ? 'gone' : 'ok', { status: gone ? 410 : 200 });
      await enqueue(store, nEvents(3).jsonl);
      await work(store, delivering);
      const ep = endpoint({ concurrency: 1 });
      await sendDeliveries(store, { endpoints: [ep], untilIdle: true });
      expect(received).toHaveLength(1);
      const [counts] = (await deliveryCounts(store)).filter((c) => c.endpoint === 'hooks');
      expect(counts?.disabled?.reason).toBe('it answered 410 Gone');
      expect(counts?.states.pending).toBe(3);
      expect((await listDeliveries(store, { endpoint: 'hooks' })).map((d) => d.attempts)).toEqual([
        0, 0, 0,
      ]);
      gone = false;
      expect(await enableEndpoint(store, 'hooks')).toBe(true);
      await sendDeliveries(store, { endpoints: [ep], untilIdle: true });
      expect((await listDeliveries(store, { endpoint: 'hooks' })).map((d) => d.state)).toEqual([
        'delivered',
        'delivered',
        'delivered',
      ]);
    });

    test('metrics per endpoint: deliveries by state, attempts by outcome, attempt latency', async () => {
      const { store, clock } = env();
      received = [];
      answer = (_r, nth) => new Response('', { status: nth === 1 ? 500 : 200 });
      await enqueue(store, nEvents(2).jsonl);
      await work(store, delivering);
      const metrics = new WorkerMetrics(store);
      const send = () =>
        sendDeliveries(store, {
          endpoints: [endpoint({ schedule: [0, 5] })],
          untilIdle: true,
          onAttempt: (a) => metrics.recordAttempt(a),
        });
      await send();
      clock.advance(5);
      await send();
      const text = await metrics.render();
      const value = (line: string) => {
        const found = text.split('\n').find((l) => l.startsWith(`${line} `));
        return found === undefined ? undefined : Number(found.slice(line.length + 1));
      };
      expect(value('onceq_deliveries{endpoint="hooks",state="delivered"}')).toBe(2);
      expect(value('onceq_deliveries{endpoint="hooks",state="dead"}')).toBe(0);
      expect(value('onceq_deliveries{endpoint="audit",state="pending"}')).toBe(2);
      expect(value('onceq_endpoint_disabled{endpoint="hooks"}')).toBe(0);
      expect(value('onceq_delivery_attempts_total{endpoint="hooks",outcome="retry"}')).toBe(2);
      expect(value('onceq_delivery_attempts_total{endpoint="hooks",outcome="delivered"}')).toBe(2);
      expect(value('onceq_delivery_attempt_seconds_count{endpoint="hooks"}')).toBe(4);
    });

    test('no secret appears in a log, a list, an attempt record, metrics or a configuration error', async () => {
      const { store } = env();
      answer = () => new Response('nope', { status: 500 });
      await enqueue(store, nEvents(1).jsonl);
      await work(store, delivering);
      const logs: AttemptLog[] = [];
      const metrics = new WorkerMetrics(store);
      await sendDeliveries(store, {
        endpoints: [endpoint({ schedule: [0] })],
        untilIdle: true,
        onAttempt: (l) => {
          logs.push(l);
          metrics.recordAttempt(l);
        },
      });
      const errors: string[] = [];
      for (const secrets of [
        [`${SECRET.slice(0, -2)}!!`],
        [`whsec_${Buffer.from('short').toString('base64')}`],
      ]) {
        await sendDeliveries(store, { endpoints: [endpoint({ secrets })], untilIdle: true }).catch(
          (e: Error) => errors.push(e.message),
        );
      }
      // A lease that does not outlast an attempt would let a second sender send it meanwhile.
      await sendDeliveries(store, {
        endpoints: [endpoint()],
        leaseSeconds: 2,
        untilIdle: true,
      }).catch((e: Error) => errors.push(e.message));
      expect(errors).toEqual([
        'endpoint hooks: secret 1: the part after whsec_ must be standard base64',
        'endpoint hooks: secret 1: a secret must decode to 24 to 64 bytes, this one is 5',
        'endpoint hooks: a lease of 2 s does not outlast its timeout of 2000 ms',
      ]);
      const printed = JSON.stringify([
        logs,
        errors,
        await listDeliveries(store),
        await showDelivery(store, 'E0001:1'),
        await deliveryCounts(store),
        await metrics.render(),
      ]);
      expect(printed).toContain('E0001:1');
      for (const secret of [SECRET, OLD_SECRET]) {
        expect(printed).not.toContain(secret.slice(6, 20));
      }
    });
  });
});
