/**
 * Idle workers on PostgreSQL and the NOTIFY of an enqueue: every listening worker of the
 * schema hears it, but they must not all claim (worker/wakeup.ts). A worker whose claim
 * after a wake came back empty reacts to the next wake later and looks before it claims,
 * so a trickle of single-message enqueues costs about one claim each, not one per idle
 * worker; and every message is still done exactly once.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { enqueue, openStore, type Store, Worker } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';

const CLAIM = 'claim-with-recovery';
const WORKERS = 6;
const ROUNDS = 20;

describePostgres('idle workers and NOTIFY', (url) => {
  const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const stores: Store[] = [];
  let claims = 0;

  /** `store` with its claims counted (statements that commit by themselves go through `read`). */
  function counted(store: Store): Store {
    return {
      ...store,
      read: (fn) =>
        store.read((x) =>
          fn({
            ...x,
            query: ((statement, parameters) => {
              if (typeof statement !== 'string' && statement.name.split('/')[1] === CLAIM) claims++;
              return x.query(statement as never, parameters);
            }) as typeof x.query,
          }),
        ),
    };
  }

  beforeAll(async () => {
    for (let i = 0; i < WORKERS + 1; i++) stores.push(await openStore(url, { schema }));
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    const admin = new SQL(url);
    try {
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await admin.close();
    }
  });

  test('single-message enqueues are claimed about once each, not once per idle worker', async () => {
    const [producer, ...workerStores] = stores as [Store, ...Store[]];
    const workers = workerStores.map(
      (store) => new Worker(counted(store), handlers.v1, { batch: 10 }),
    );
    const admin = new SQL(url);
    const done = async () => {
      const [row] = await admin.unsafe(
        `SELECT count(*)::int AS n, coalesce(sum(attempts), 0)::int AS attempts
         FROM "${schema}".messages WHERE state = 'done'`,
      );
      return row as { n: number; attempts: number };
    };
    try {
      for (const worker of workers) await worker.start();
      const perRound: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const before = claims;
        const id = `E${String(round).padStart(4, '0')}`;
        await enqueue(
          producer,
          `{"event_id":"${id}","payload":{"category":"book","amount_cents":${round + 1}}}\n`,
        );
        // Bounded wait for the event: the message done (the poll alone would take up to 5 s).
        let n = 0;
        for (let i = 0; i < 600 && n <= round; i++) {
          n = (await done()).n;
          if (n <= round) await Bun.sleep(10);
        }
        expect(n).toBe(round + 1);
        perRound.push(claims - before);
      }
      const { n, attempts } = await done();
      expect(n).toBe(ROUNDS);
      expect(attempts).toBe(ROUNDS);
      // A round's winner claims twice (its message, then an empty claim ahead); every idle
      // worker claiming on every NOTIFY is WORKERS + 1 claims a round. Backing off, each
      // other worker loses a few races until its delay outlasts the winner's claim, then
      // only looks (a poll that happens to see the message ready still claims): in the
      // second half of the rounds the typical round is the winner's two claims.
      const settled = perRound.slice(ROUNDS / 2).sort((a, b) => a - b);
      expect(settled[settled.length / 2]).toBeLessThanOrEqual(3);
    } finally {
      for (const worker of workers) await worker.stop();
      await admin.close();
    }
  }, 120_000);
});
