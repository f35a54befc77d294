// `onceq serve` as a real process on loopback, on SQLite and PostgreSQL: concurrent
// senders, the server SIGKILLed in the middle of the load; afterwards every event that
// got a 2xx is in the store, and nothing that was not validly sent is (forged and stale
// requests mixed into the load write nothing). A replay after the restart is a 200
// that writes nothing; a busy port is refused with one sentence; no secret is printed.
import { afterEach, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@onceq/core';
import { setIdPolicy } from '@onceq/core';
import { signatureHeader } from '@onceq/core/webhooks';
import { onPostgres } from '../support/backends.ts';
import { rawDb, rememberTarget } from '../support/raw-db.ts';
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

function request(
  url: string,
  id: string,
  body: string,
  key = KEY,
  timestamp = Math.floor(Date.now() / 1000),
) {
  return fetch(`${url}/hooks/shop`, {
    method: 'POST',
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([key], id, timestamp, body),
    },
    body,
  });
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

async function storedIds(store: Store): Promise<Set<string>> {
  const rows = await rawDb(store, (db) => db.selectFrom('messages').select('event_id').execute());
  return new Set(rows.map((r) => r.event_id));
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

    test('SIGKILL under concurrent senders: every 2xx event is stored, nothing forged or stale is', async () => {
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
      const sentValid = new Set<string>();
      let stop = false;
      const sender = async (s: number) => {
        for (let i = 0; !stop; i++) {
          const id = `evt_${s}_${i}`;
          const body = JSON.stringify({ sender: s, n: i });
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
              expect([forged.status, stale.status]).toEqual([401, 401]);
            }
            sentValid.add(id);
            const response = await request(first.url, id, body);
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

      const stored = await storedIds(shared.store);
      for (const id of acked) expect(stored.has(id)).toBe(true);
      for (const id of stored) expect(sentValid.has(id)).toBe(true);
      console.log(
        `${backend}: ${acked.size} acknowledged, ${stored.size} stored, ${sentValid.size} sent before the SIGKILL`,
      );

      // Restarted on the same port: a replay of an acknowledged request is a 200 that writes nothing.
      const second = await startServe(shared, port);
      procs.push(second.proc);
      const replayed = [...acked][0] as string;
      const [s, n] = replayed.slice(4).split('_').map(Number);
      expect((await request(second.url, replayed, JSON.stringify({ sender: s, n }))).status).toBe(
        200,
      );
      expect((await storedIds(shared.store)).size).toBe(stored.size);
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
