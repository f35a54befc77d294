// `onceq serve` as a real process on loopback, on SQLite and PostgreSQL: concurrent
// senders, the server SIGKILLed in the middle of the load; afterwards every event that
// got a 2xx is in the store with the canonical form of the body sent, and nothing else
// is: besides them, at most the one request each sender had in flight at the kill, and
// forged and stale requests mixed into the load write nothing. After the restart, an
// accepted request replayed byte for byte (its timestamp too) and a sender's retry are
// 200s that write nothing; a busy port is refused with one sentence; no secret is
// printed.
import { afterEach, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@onceq/core';
import { setIdPolicy } from '@onceq/core';
import { signatureHeader } from '@onceq/core/webhooks';
import { onPostgres } from '../support/backends.ts';
import { rawDb, rememberTarget } from '../support/raw-db.ts';
import { rawRequest } from '../support/raw-http.ts';
import {
  type SharedStore,
  sharedStore,
  startOnceq,
  type WorkerProcess,
} from '../support/worker-process.ts';

const SECRET = `whsec_${Buffer.from('serve secret!, thirty-two bytes.').toString('base64')}`;
const KEY = new Uint8Array(Buffer.from(SECRET.slice(6), 'base64'));
const FORGED = new Uint8Array(Buffer.from('a forged key, also thirty-two by'));
const SENDERS = 16;

/** One request as sent: its Standard Webhooks headers and its body. */
interface Sent {
  headers: Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>;
  body: string;
}

function signed(
  id: string,
  body: string,
  key = KEY,
  timestamp = Math.floor(Date.now() / 1000),
): Sent {
  return {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([key], id, timestamp, body),
    },
    body,
  };
}

function post(url: string, sent: Sent) {
  return fetch(`${url}/hooks/shop`, { method: 'POST', headers: sent.headers, body: sent.body });
}

function request(url: string, id: string, body: string, key = KEY, timestamp?: number) {
  return post(url, signed(id, body, key, timestamp));
}

/**
 * Sender `s`'s `n`th body, with spaces, keys out of order, non-ASCII text and a float;
 * and, written out by hand, the canonical form the store keeps of it.
 */
function bodyOf(s: number, n: number): { body: string; canonical: string } {
  return {
    body: `{ "sender": ${s}, "n": ${n}, "note": "café ✓", "ratio": 1.0 }`,
    canonical: `{"n":${n},"note":"café ✓","ratio":1.0,"sender":${s}}`,
  };
}

async function startServe(
  shared: SharedStore,
  port = 0,
): Promise<{ proc: WorkerProcess; url: string }> {
  const proc = startOnceq(
    ['serve', '--db', shared.db, '--port', String(port), '--json'],
    shared.cwd,
    { SHOP_SECRET: SECRET },
  );
  const deadline = Date.now() + 20_000;
  while (!proc.stdout().includes('\n')) {
    if (Date.now() > deadline) throw new Error(`serve did not start: ${proc.stderr()}`);
    await Bun.sleep(20);
  }
  return { proc, url: (JSON.parse(proc.stdout().split('\n')[0] as string) as { url: string }).url };
}

/** Every stored event id with its stored payload. */
async function storedPayloads(store: Store): Promise<Map<string, string | null>> {
  const rows = await rawDb(store, (db) =>
    db.selectFrom('messages').select(['event_id', 'payload']).orderBy('event_id').execute(),
  );
  return new Map(rows.map((r) => [r.event_id, r.payload]));
}

function serveSuite(backend: 'sqlite' | 'postgres') {
  describe(`${backend}: onceq serve`, () => {
    let shared: SharedStore | undefined;
    const procs: WorkerProcess[] = [];
    afterEach(async () => {
      for (const p of procs.splice(0)) {
        p.signal('SIGTERM');
        await p.exited(5000);
      }
      await shared?.cleanup();
    });

    test('SIGKILL under concurrent senders: every 2xx event is stored as sent; besides them only requests in flight, nothing forged or stale', async () => {
      shared = await sharedStore(backend);
      if (backend === 'postgres')
        rememberTarget(shared.store, { target: shared.db, schema: 'onceq' });
      await setIdPolicy(shared.store, { kind: 'general' });
      writeFileSync(
        join(shared.cwd, 'onceq.config.json'),
        JSON.stringify({
          sources: {
            shop: { path: '/hooks/shop', verify: 'standard-webhooks', secret_env: 'SHOP_SECRET' },
          },
        }),
      );
      const first = await startServe(shared);
      procs.push(first.proc);
      const port = Number(new URL(first.url).port);

      // A second server on the same port is refused, in one sentence.
      const busy = startOnceq(['serve', '--db', shared.db, '--port', String(port)], shared.cwd, {
        SHOP_SECRET: SECRET,
      });
      expect(await busy.exited()).toBe(2);
      expect(busy.stderr().trim()).toBe(
        `onceq: cannot listen on 127.0.0.1:${port}: the port is in use, pick another with --port`,
      );

      const acked = new Set<string>();
      /** Every valid request sent, by event id, with its answer's status (null: none came). */
      const sent = new Map<string, { request: Sent; canonical: string; status: number | null }>();
      const unexpected: string[] = [];
      let stop = false;
      const sender = async (s: number) => {
        for (let i = 0; !stop; i++) {
          const id = `evt_${s}_${i}`;
          const { body, canonical } = bodyOf(s, i);
          try {
            if (i % 7 === 3) {
              // Forged and stale requests, mixed in: never stored.
              const forged = await request(first.url, `forged_${s}_${i}`, body, FORGED);
              const stale = await request(
                first.url,
                `stale_${s}_${i}`,
                body,
                KEY,
                Math.floor(Date.now() / 1000) - 600,
              );
              if (forged.status !== 401 || stale.status !== 401)
                unexpected.push(`${id}: forged ${forged.status}, stale ${stale.status}`);
            }
            const entry = { request: signed(id, body), canonical, status: null as number | null };
            sent.set(id, entry);
            const response = await post(first.url, entry.request);
            entry.status = response.status;
            if (response.status === 200) acked.add(id);
          } catch {
            return; // the server is gone
          }
        }
      };
      const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
      const deadline = Date.now() + 60_000;
      while (acked.size < 300) {
        if (Date.now() > deadline) throw new Error(`only ${acked.size} events acknowledged`);
        await Bun.sleep(20);
      }
      process.kill(first.proc.pid, 'SIGKILL');
      stop = true;
      await Promise.all(senders);
      procs.splice(procs.indexOf(first.proc), 1);
      await first.proc.exited();
      expect(unexpected).toEqual([]);

      const stored = await storedPayloads(shared.store);
      for (const id of acked) expect(stored.has(id)).toBe(true);
      // Nothing else: every stored event was validly sent, with the payload sent; those
      // without a 2xx are requests that got no answer at all (an answer other than 2xx
      // means nothing was written), at most one per sender (each sends one at a time):
      // at most the requests in flight at the kill.
      const inFlight = new Map<string, string>();
      for (const [id, payload] of stored) {
        const entry = sent.get(id);
        expect([id, payload]).toEqual([id, entry?.canonical ?? 'never sent']);
        if (acked.has(id)) continue;
        expect([id, entry?.status]).toEqual([id, null]);
        const s = id.split('_')[1] as string;
        expect([id, inFlight.get(s)]).toEqual([id, undefined]);
        inFlight.set(s, id);
      }
      expect(inFlight.size).toBeLessThanOrEqual(SENDERS);
      console.log(
        `${backend}: ${acked.size} acknowledged, ${stored.size} stored, ${sent.size} sent before the SIGKILL`,
      );

      // Restarted on the same port: an acknowledged request replayed byte for byte (the
      // same headers, timestamp included, and body) is a 200 that writes nothing; so is a
      // sender's retry, signed again with a new timestamp.
      const second = await startServe(shared, port);
      procs.push(second.proc);
      const replayed = [...acked][0] as string;
      const captured = (sent.get(replayed) as { request: Sent }).request;
      const head = [
        'POST /hooks/shop HTTP/1.1',
        `Host: 127.0.0.1:${port}`,
        ...Object.entries(captured.headers).map(([name, value]) => `${name}: ${value}`),
      ].join('\r\n');
      const replay = await rawRequest(port, head, captured.body);
      expect([replay.status, JSON.parse(replay.body)]).toEqual([200, { event_id: replayed }]);
      const retry = await request(second.url, replayed, captured.body);
      expect([retry.status, await retry.json()]).toEqual([200, { event_id: replayed }]);
      expect(await storedPayloads(shared.store)).toEqual(stored);
      second.proc.signal('SIGTERM');
      expect(await second.proc.exited()).toBe(0);
      procs.splice(procs.indexOf(second.proc), 1);
      for (const p of [first.proc, second.proc, busy]) {
        expect(p.stdout() + p.stderr()).not.toContain(SECRET.slice(6, 30));
      }
    }, 120_000);
  });
}

serveSuite('sqlite');
onPostgres('onceq serve', () => serveSuite('postgres'));
