/**
 * Core's two-stage shutdown (`stopOnSignals` from `@onceq/core/service`), the one that
 * `onceq worker` and `onceq work` both use: it resolves once the worker ended, by a
 * signal or by itself, and takes its listeners away either way. The signal is a real
 * SIGTERM sent to this process, only while the listener is shown to be in place.
 */
import { expect, test } from 'bun:test';
import { enqueue, Worker } from '@onceq/core';
import { silentLog, stopOnSignals } from '@onceq/core/service';
import { handlers } from '@onceq/handler';
import { batch, line, paid, sqliteFactory, withFreshStore } from '../support/factories.ts';

const listeners = () => [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];

test('a drain that ends by itself resolves with no signal and leaves no listener behind', async () => {
  await withFreshStore(sqliteFactory, async ({ store }) => {
    await enqueue(store, batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 5))));
    const before = listeners();
    const worker = new Worker(store, handlers.v1, { drain: true });
    const ended = stopOnSignals(worker, { timeoutMs: 5_000, log: silentLog });
    expect(listeners()).toEqual(before.map((n) => n + 1));
    await worker.start();
    const result = await ended;
    expect([result.signal, result.graceful, result.summary.done]).toEqual([null, true, 2]);
    expect(listeners()).toEqual(before);
  });
});

test('the first SIGTERM stops a running worker gracefully, says so, and removes the listeners', async () => {
  await withFreshStore(sqliteFactory, async ({ store }) => {
    const before = listeners();
    const worker = new Worker(store, handlers.v1);
    const seen: string[] = [];
    const ended = stopOnSignals(worker, {
      timeoutMs: 5_000,
      log: { write: (event) => seen.push(`log ${event}`) },
      onSignal: (signal, stage) => seen.push(`${stage} ${signal}`),
    });
    await worker.start();
    expect(listeners()).toEqual(before.map((n) => n + 1));
    process.kill(process.pid, 'SIGTERM');
    const result = await ended;
    expect([result.signal, result.graceful, result.abandoned]).toEqual(['SIGTERM', true, 0]);
    expect(seen).toEqual(['stopping SIGTERM', 'log stopping']);
    expect(listeners()).toEqual(before);
  });
});
