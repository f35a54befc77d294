// Stopping the one worker loop for real, on both backends: `onceq work` on Ctrl-C (once:
// graceful, twice: at once) and `onceq worker` on a second SIGTERM. What must hold: a
// claimed message whose handler never started is released (ready, attempt given back),
// never abandoned; only a running handler's lease is left to expire, and the command
// says which one and until when; the JSON log ends with a `stopped` event. Real child
// processes, real signals; every wait is a bounded wait for an event.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { enqueue, show } from '@onceq/core';
import { forEachBackend } from '../support/backends.ts';
import {
  type SharedStore,
  SLOW_HANDLER,
  STUCK_HANDLER,
  sharedStore,
  sleepyBatch,
  startOnceq,
  startWorker,
} from '../support/worker-process.ts';

// Real processes on a shared, loaded machine: a generous bound (every wait is for a condition).
setDefaultTimeout(120_000);

forEachBackend('stopping the worker loop', ({ name: backend }) => {
  describe(`${backend}: stopping the worker loop`, () => {
    let shared: SharedStore;
    beforeEach(async () => {
      shared = await sharedStore(backend);
    });
    afterEach(async () => {
      await shared.cleanup();
    });
    const expectReleased = async (...ids: string[]) => {
      for (const id of ids) {
        const m = await show(shared.store, id);
        expect([id, m.state, m.attempts, m.generation, m.leaseUntil]).toEqual([
          id,
          'ready',
          0,
          1,
          null,
        ]);
      }
    };

    test('Ctrl-C during onceq work: the running handler finishes and is recorded, the unstarted claims are released, exit 130', async () => {
      await enqueue(shared.store, sleepyBatch([1500, 0, 0]));
      const w = startOnceq(
        ['work', '--db', shared.db, '--handler', SLOW_HANDLER, '--batch', '3'],
        shared.cwd,
      );
      await w.waitForLog(/handler-start E0001 g1/);
      w.signal('SIGINT');
      expect(await w.exited()).toBe(130);
      expect(w.stderr()).toContain('onceq: Ctrl-C: stopping; no new claims');
      expect(w.stderr()).toContain(
        'onceq: interrupted: so far claimed 3 messages: 1 done, 0 retried, 0 dead; stopped between transactions, nothing is half done; 2 claimed but unstarted messages released (ready now, attempts given back)',
      );
      expect(w.stderr()).not.toContain('handler-start E0002');
      expect(w.stdout()).toContain('handler slow-test: claimed 3 messages: 1 done');
      const first = await show(shared.store, 'E0001');
      expect([first.state, first.effect?.amountCents]).toEqual(['done', 100]);
      await expectReleased('E0002', 'E0003');
    });

    test('Ctrl-C twice during onceq work: unstarted claims are released, the running one stays leased and the command says until when', async () => {
      await enqueue(shared.store, sleepyBatch([0, 0, 0]));
      const w = startOnceq(
        ['work', '--db', shared.db, '--handler', STUCK_HANDLER, '--batch', '3', '--json'],
        shared.cwd,
      );
      await w.waitForLog(/handler-start E0001 g1/);
      w.signal('SIGINT');
      await w.waitForLog(/onceq: Ctrl-C: stopping/);
      w.signal('SIGINT');
      expect(await w.exited()).toBe(130);
      const held = await show(shared.store, 'E0001');
      expect([held.state, held.attempts, held.generation]).toEqual(['leased', 1, 1]);
      const until = new Date((held.leaseUntil as number) * 1000).toLocaleTimeString('en-GB', {
        hour12: false,
      });
      expect(w.stderr()).toContain('2 claimed but unstarted messages released');
      expect(w.stderr()).toContain(
        `still leased, its handler abandoned: E0001 until ${until} (the attempt is spent; a claim after that recovers it)`,
      );
      expect(w.stderr()).toContain('handler-aborted E0001 worker stopped');
      expect(JSON.parse(w.stdout())).toMatchObject({
        claimed: 3,
        done: 0,
        interrupted: true,
        released: 2,
        abandoned: [{ event_id: 'E0001', generation: 1, lease_until: held.leaseUntil }],
      });
      await expectReleased('E0002', 'E0003');
    });

    test('a forced stop of onceq worker releases the claimed but unstarted messages, and the JSON log ends with "stopped"', async () => {
      await enqueue(shared.store, sleepyBatch([0, 0, 0]));
      const w = startWorker(
        ['--db', shared.db, '--handler', STUCK_HANDLER, '--batch', '3', '--log-format', 'json'],
        shared.cwd,
      );
      await w.waitForLog(/handler-start E0001 g1/);
      w.signal('SIGTERM');
      await w.waitForLog(/"event":"stopping"/);
      w.signal('SIGTERM');
      expect(await w.exited()).toBe(1);
      expect(w.stdout()).toContain('1 message abandoned to lease expiry');
      expect(w.stdout()).toContain('2 released');
      const events = w
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { event: string });
      expect(events.at(-1)).toMatchObject({
        event: 'stopped',
        graceful: false,
        abandoned: 1,
        claimed: 3,
        released: 2,
      });
      expect((await show(shared.store, 'E0001')).state).toBe('leased');
      await expectReleased('E0002', 'E0003');
    });
  });
});
