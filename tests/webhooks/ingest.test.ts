// Webhooks in, through the ingest fetch handler on both backends (model clock): a
// verified request is answered 200 only once its event is stored; a replay is a
// duplicate; forged, stale and unsigned requests are 401 and write nothing; malformed
// bodies are 400 naming the problem, oversized ones 413, a conflicting payload 409;
// requests that arrive together share one commit; while the store cannot commit, a
// request stays unanswered and others that need no commit are still answered. Requests
// signed by the tests' own signer (never core's) prove the verifier against the
// specification: its published example, and a source with two secrets.
import { Database as BunDatabase } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { type Store, show, status } from '@onceq/core';
import { createIngest, type IngestSource, signatureHeader } from '@onceq/core/webhooks';
import { sql } from 'kysely';
import { freshStore } from '../conformance/harness.ts';
import { forEachBackend } from '../support/backends.ts';
import type { BackendFactory } from '../support/factories.ts';
import { T0 } from '../support/factories.ts';
import { openRawDb } from '../support/raw-db.ts';
import { v1Signature } from '../support/standard-webhooks.ts';

const SECRET = `whsec_${Buffer.from('ingest secret, thirty-two bytes!').toString('base64')}`;
const NEXT_SECRET = `whsec_${Buffer.from('the next secret, rotated in soon').toString('base64')}`;
const KEY = new Uint8Array(Buffer.from(SECRET.slice(6), 'base64'));
const TOKEN = 'a-token-of-at-least-16-characters';
/** A secret neither source holds. */
const OTHER_SECRET = `whsec_${Buffer.from('a third secret, no source has it').toString('base64')}`;

/**
 * The Standard Webhooks specification's published example. A second implementation
 * agrees: `printf '%s' 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}' |
 * openssl dgst -sha256 -mac HMAC -macopt hexkey:31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0
 * -binary | base64` (the key is the secret's base64 part, decoded).
 */
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
} as const;

const SOURCES: IngestSource[] = [
  {
    name: 'shop',
    path: '/hooks/shop',
    verify: { kind: 'standard-webhooks', secrets: [NEXT_SECRET, SECRET] },
  },
  {
    name: 'github',
    path: '/hooks/github',
    verify: { kind: 'token', tokens: [TOKEN] },
    eventId: { header: 'x-github-delivery' },
  },
  {
    name: 'stripe',
    path: '/hooks/stripe',
    verify: { kind: 'token', tokens: [TOKEN], header: 'x-hook-token' },
    eventId: { field: 'id' },
  },
];

function signed(id: string, body: string, timestamp = T0, key = KEY): Request {
  return new Request('http://127.0.0.1/hooks/shop', {
    method: 'POST',
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([key], id, timestamp, body),
    },
    body,
  });
}

/** A request to `/hooks/shop` carrying exactly `signature`, made without core's signer. */
function withSignature(id: string, body: string, signature: string, timestamp = T0): Request {
  return new Request('http://127.0.0.1/hooks/shop', {
    method: 'POST',
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    },
    body,
  });
}

async function reply(response: Response): Promise<[number, string]> {
  return [
    response.status,
    ((await response.json()) as { error?: string; event_id?: string }).error ?? 'ok',
  ];
}

/** Holds the store's write lock from a connection of the test's own until released. */
async function holdWrites(store: Store): Promise<() => Promise<void>> {
  if (store.kind === 'sqlite') {
    const db = new BunDatabase(store.location);
    db.run('BEGIN IMMEDIATE');
    return async () => {
      db.run('ROLLBACK');
      db.close();
    };
  }
  const db = await openRawDb(store);
  const trx = await db.startTransaction().execute();
  await sql`LOCK TABLE messages IN EXCLUSIVE MODE`.execute(trx);
  return async () => {
    await trx.rollback().execute();
    await db.destroy();
  };
}

const generalFactory = (factory: BackendFactory): BackendFactory => ({
  name: factory.name,
  open: (clock) => factory.open(clock, { kind: 'general' }),
});

test("the specification's example signature: the tests' signer and core's both make it", async () => {
  expect(await v1Signature(SPEC.secret, SPEC.id, SPEC.timestamp, SPEC.body)).toBe(SPEC.signature);
  const key = new Uint8Array(Buffer.from(SPEC.secret.slice(6), 'base64'));
  expect(signatureHeader([key], SPEC.id, SPEC.timestamp, SPEC.body)).toBe(SPEC.signature);
});

forEachBackend('ingest', (factory) => {
  describe(`${factory.name}: ingest`, () => {
    const env = freshStore(generalFactory(factory));

    test('a verified request is stored before its 200; a replay is a duplicate; forged, stale and unsigned write nothing', async () => {
      const { store } = env();
      const ingest = createIngest(store, { sources: SOURCES });
      const body = '{ "amount_cents": 100, "category": "book", "note": 1.0 }';
      expect(await reply(await ingest.fetch(signed('msg_1', body)))).toEqual([200, 'ok']);
      expect((await show(store, 'msg_1')).payloadText).toBe(
        '{"amount_cents":100,"category":"book","note":1.0}',
      );
      expect(await reply(await ingest.fetch(signed('msg_1', body)))).toEqual([200, 'ok']);
      const forgedKey = new Uint8Array(Buffer.from('not the secret, but 32 bytes....'));
      const refused = [
        signed('msg_2', body, T0, forgedKey),
        signed('msg_3', body, T0 - 301),
        signed('msg_4', body, T0 + 301),
        new Request('http://127.0.0.1/hooks/shop', { method: 'POST', body }),
      ];
      const answers = [];
      for (const r of refused) answers.push(await reply(await ingest.fetch(r)));
      expect(answers).toEqual([
        [401, 'no signature matches'],
        [401, 'webhook-timestamp is more than 300 s away from now'],
        [401, 'webhook-timestamp is more than 300 s away from now'],
        [401, 'webhook-id, webhook-timestamp and webhook-signature are all required'],
      ]);
      // A signature over other bytes than those sent is refused too.
      const tampered = signed('msg_5', body);
      const swapped = new Request(tampered.url, {
        method: 'POST',
        headers: tampered.headers,
        body: body.replace('100', '900'),
      });
      expect((await ingest.fetch(swapped)).status).toBe(401);
      expect((await status(store)).messages.ready).toBe(1);
    });

    test("the specification's example request is stored; the same signature a second later is 401", async () => {
      const { store, clock } = env();
      clock.set(SPEC.timestamp);
      const ingest = createIngest(store, {
        sources: [
          {
            name: 'spec',
            path: '/hooks/shop',
            verify: { kind: 'standard-webhooks', secrets: [SPEC.secret] },
          },
        ],
      });
      const later = withSignature(SPEC.id, SPEC.body, SPEC.signature, SPEC.timestamp + 1);
      expect(await reply(await ingest.fetch(later))).toEqual([401, 'no signature matches']);
      const request = withSignature(SPEC.id, SPEC.body, SPEC.signature, SPEC.timestamp);
      expect(await reply(await ingest.fetch(request))).toEqual([200, 'ok']);
      expect((await show(store, SPEC.id)).payloadText).toBe('{"test":2432232314}');
      expect((await status(store)).messages.ready).toBe(1);
    });

    test('two secrets, signed independently: either alone verifies, a wrong and a right one verify, all wrong is 401 and writes nothing', async () => {
      const { store } = env();
      const ingest = createIngest(store, { sources: SOURCES });
      const body = '{"order":"café ✓","n":1}';
      const sign = (secret: string, id: string, timestamp = T0) =>
        v1Signature(secret, id, timestamp, body);
      const accepted: [string, string][] = [
        ['msg_second', await sign(SECRET, 'msg_second')],
        ['msg_first', await sign(NEXT_SECRET, 'msg_first')],
        [
          'msg_mixed',
          `${await sign(OTHER_SECRET, 'msg_mixed')} ${await sign(SECRET, 'msg_mixed')}`,
        ],
      ];
      for (const [id, signature] of accepted) {
        expect([
          id,
          ...(await reply(await ingest.fetch(withSignature(id, body, signature)))),
        ]).toEqual([id, 200, 'ok']);
      }
      const right = (await sign(SECRET, 'msg_wrong')).slice('v1,'.length);
      const allWrong = [
        // A secret no source holds, and a signature over another id and timestamp.
        `${await sign(OTHER_SECRET, 'msg_wrong')} ${await sign(SECRET, 'msg_other', T0 + 1)}`,
        // The right MAC under a version other than v1.
        `v1a,${right} v2,${right}`,
        // The right MAC, but not base64 of it.
        `v1,${Buffer.from(right, 'base64').toString('hex')}`,
      ];
      for (const signature of allWrong) {
        expect(
          await reply(await ingest.fetch(withSignature('msg_wrong', body, signature))),
        ).toEqual([401, 'no signature matches']);
      }
      expect((await status(store)).messages.ready).toBe(3);
      expect((await show(store, 'msg_second')).payloadText).toBe('{"n":1,"order":"café ✓"}');
      await expect(show(store, 'msg_wrong')).rejects.toThrow();
    });

    test('malformed bodies are 400 naming the problem, big ones 413, a conflicting payload 409; nothing written', async () => {
      const { store } = env();
      const ingest = createIngest(store, { sources: SOURCES, maxBodyBytes: 20_000 });
      await ingest.fetch(signed('msg_1', '{"a":1}'));
      const cases: [string, string][] = [
        ['msg_2', '{"a":1,"a":2}'],
        ['msg_3', '[1,2]'],
        ['msg_4', '{"a":NaN}'],
        ['msg_5', `{"a":"${'x'.repeat(10_001)}"}`],
        ['msg_6', `{"a":"${'x'.repeat(20_001)}"}`],
        ['msg_1', '{"a":2}'],
        ['bad id', '{"a":1}'],
      ];
      const answers = [];
      for (const [id, body] of cases)
        answers.push((await reply(await ingest.fetch(signed(id, body))))[0]);
      expect(answers).toEqual([400, 400, 400, 413, 413, 409, 400]);
      // A body over the limit is refused whether its length is declared (truly or not) or not.
      const small = createIngest(store, { sources: SOURCES, maxBodyBytes: 100 });
      const big = `{"a":"${'x'.repeat(200)}"}`;
      const understated = signed('msg_7', big);
      understated.headers.set('content-length', '10');
      const undeclared = signed('msg_8', big);
      undeclared.headers.delete('content-length');
      const stated = signed('msg_9', big);
      stated.headers.set('content-length', String(big.length));
      for (const request of [understated, undeclared, stated]) {
        expect((await reply(await small.fetch(request)))[0]).toBe(413);
      }
      const [, duplicateKey] = await reply(await ingest.fetch(signed('msg_2', '{"a":1,"a":2}')));
      expect(duplicateKey).toContain('the body is not valid JSON');
      expect(duplicateKey).toContain('"a"');
      expect((await status(store)).messages.ready).toBe(1);
    });

    test('token sources take the event id from a header or a body field; a wrong token is 401', async () => {
      const { store } = env();
      const ingest = createIngest(store, { sources: SOURCES });
      const github = (token: string) =>
        new Request('http://127.0.0.1/hooks/github', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'x-github-delivery': 'gh-delivery-1' },
          body: '{"action":"opened"}',
        });
      expect(await reply(await ingest.fetch(github(`${TOKEN}x`)))).toEqual([
        401,
        'the authorization header does not hold a valid token',
      ]);
      expect((await ingest.fetch(github(TOKEN))).status).toBe(200);
      const stripe = new Request('http://127.0.0.1/hooks/stripe', {
        method: 'POST',
        headers: { 'x-hook-token': TOKEN },
        body: '{"id":"evt_1","type":"charge.succeeded"}',
      });
      expect((await ingest.fetch(stripe)).status).toBe(200);
      const noId = new Request('http://127.0.0.1/hooks/stripe', {
        method: 'POST',
        headers: { 'x-hook-token': TOKEN },
        body: '{"type":"x"}',
      });
      expect(await reply(await ingest.fetch(noId))).toEqual([
        400,
        'no event id: the body field id must be a non-empty string',
      ]);
      expect(
        (await ingest.fetch(new Request('http://127.0.0.1/elsewhere', { method: 'POST' }))).status,
      ).toBe(404);
      expect((await show(store, 'evt_1')).payloadText).toBe(
        '{"id":"evt_1","type":"charge.succeeded"}',
      );
      expect((await status(store)).messages.ready).toBe(2);
    });

    test('a 200 waits for its commit: while the store is locked the request stays unanswered, a forged one is still refused', async () => {
      const { store } = env();
      const ingest = createIngest(store, { sources: SOURCES });
      expect((await ingest.fetch(signed('msg_0', '{"n":0}'))).status).toBe(200);
      const release = await holdWrites(store);
      let answered = false;
      const waiting = ingest.fetch(signed('msg_1', '{"n":1}')).then((response) => {
        answered = true;
        return response;
      });
      const forgedKey = new Uint8Array(Buffer.from('not the secret, but 32 bytes....'));
      expect((await ingest.fetch(signed('msg_2', '{"n":2}', T0, forgedKey))).status).toBe(401);
      // Two callers wait for the open request (a server stopping, and its caller).
      let drained = 0;
      const drains = [ingest.drain(), ingest.drain()].map((d) => d.then(() => (drained += 1)));
      // Time enough for an answer that did not wait for the commit to arrive.
      await Bun.sleep(300);
      expect([answered, drained]).toEqual([false, 0]);
      await release();
      expect((await waiting).status).toBe(200);
      expect((await show(store, 'msg_1')).payloadText).toBe('{"n":1}');
      await Promise.all(drains);
      expect(drained).toBe(2);
    });

    test('requests that arrive together share commits; two payloads for one id: the first stored, the other 409', async () => {
      const { store } = env();
      const commits: number[] = [];
      const ingest = createIngest(store, { sources: SOURCES, onCommit: (n) => commits.push(n) });
      const many = Array.from({ length: 60 }, (_, i) =>
        ingest.fetch(signed(`msg_${i}`, `{"n":${i}}`)),
      );
      const statuses = await Promise.all(many.map(async (r) => (await r).status));
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(commits.reduce((a, b) => a + b, 0)).toBe(60);
      expect(commits.length).toBeLessThan(60);
      const pair = await Promise.all([
        ingest.fetch(signed('msg_x', '{"n":1}')),
        ingest.fetch(signed('msg_x', '{"n":2}')),
      ]);
      expect(pair.map((r) => r.status)).toEqual([200, 409]);
      expect((await status(store)).messages.ready).toBe(61);
    });
  });
});
