// The worker's heartbeat on both backends, on the model clock: the test moves the store's
// time only after it has seen the lease renewed, so a slow machine can delay a beat but
// never lose a lease. A handler held past its first lease ends done once, under its
// claim's generation; the same steps with the heartbeat unable to reach its lease show
// the guard: the lease runs out and the late result is refused.
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import {
  claim,
  enqueue,
  type Handler,
  type Store,
  show,
  Worker,
  type WorkerOptions,
} from '@onceq/core';
import { handlers } from '@onceq/handler';
import { freshStore } from '../conformance/harness.ts';
import { forEachBackend } from '../support/backends.ts';
import { type BackendFactory, batch, line, paid, T0 } from '../support/factories.ts';

setDefaultTimeout(120_000);

/** The lease in seconds: a beat every third of it, a second of real time. */
const LEASE_SECONDS = 3;

/** Polls `condition` every 10 ms until true; throws after 60 s. */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/**
 * E0001 enqueued and a worker started on it (one message a claim, the lease of
 * {@link LEASE_SECONDS}) whose handler runs v1 once `open()` is called; resolves once
 * the handler is running.
 */
async function gatedWorker(store: Store, options: WorkerOptions = {}) {
  await enqueue(store, batch(line('E0001', paid('book', 100))));
  const started = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  const handler: Handler = async (payload, context) => {
    started.resolve();
    await gate.promise;
    return handlers.v1(payload, context);
  };
  const worker = new Worker(store, handler, {
    batch: 1,
    leaseSeconds: LEASE_SECONDS,
    pollMaxMs: 20,
    ...options,
  });
  await worker.start();
  await started.promise;
  return { worker, open: () => gate.resolve() };
}

/** Resolves once E0001 is leased under generation 1 until `leaseUntil`. */
function leasedUntil(store: Store, leaseUntil: number) {
  return until(async () => {
    const m = await show(store, 'E0001');
    if (m.state !== 'leased' || m.generation !== 1) {
      throw new Error(`E0001 left its lease: ${m.state}, generation ${m.generation}`);
    }
    return m.leaseUntil === leaseUntil;
  }, `E0001 leased until ${leaseUntil}`);
}

function heartbeatSuite(factory: BackendFactory) {
  describe(`${factory.name}: the worker's heartbeat`, () => {
    const env = freshStore(factory);

    test('renews the lease while the handler runs: past its first lease_until, done exactly once under generation 1', async () => {
      const { store, clock } = env();
      const { worker, open } = await gatedWorker(store);
      try {
        await leasedUntil(store, T0 + LEASE_SECONDS);
        // Each step stays inside the lease the last beat wrote; the next beat renews it
        // from the new now. Two steps put the clock past the first lease_until.
        clock.set(T0 + LEASE_SECONDS - 1);
        await leasedUntil(store, T0 + 2 * LEASE_SECONDS - 1);
        clock.set(T0 + 2 * LEASE_SECONDS - 2);
        await leasedUntil(store, T0 + 3 * LEASE_SECONDS - 2);
        expect(clock()).toBeGreaterThan(T0 + LEASE_SECONDS);
        // Nobody else can take it meanwhile: the renewed lease holds.
        expect(await claim(store)).toBeNull();
        open();
        await until(async () => (await show(store, 'E0001')).state === 'done', 'E0001 done');
      } finally {
        open();
        await worker.stop();
      }
      const m = await show(store, 'E0001');
      expect([m.state, m.attempts, m.generation, m.effect?.amountCents]).toEqual([
        'done',
        1,
        1,
        100,
      ]);
      expect(worker.summary).toMatchObject({ claimed: 1, done: 1, lost: 0 });
      expect(worker.summary.extended).toBeGreaterThanOrEqual(2);
    });

    test('without a renewal the lease runs out: another claim takes the message and the late result is refused as lost', async () => {
      const { store, clock } = env();
      const { worker, open } = await gatedWorker(store, { max: 1 });
      try {
        await leasedUntil(store, T0 + LEASE_SECONDS);
        // A step past the lease before any beat could renew it: the lease is gone.
        clock.set(T0 + LEASE_SECONDS);
        const thief = await claim(store);
        expect([thief?.eventId, thief?.generation]).toEqual(['E0001', 2]);
        open();
        await worker.finished();
      } finally {
        open();
        await worker.stop();
      }
      expect(worker.summary).toMatchObject({ claimed: 1, done: 0, lost: 1 });
      const m = await show(store, 'E0001');
      expect([m.state, m.generation, m.effect]).toEqual(['leased', 2, null]);
    });
  });
}

forEachBackend("the worker's heartbeat", heartbeatSuite);
