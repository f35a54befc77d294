// `onceq worker` as a real process on both backends: signals, release, heartbeats,
// a refused extension, metrics. Every wait is a bounded wait for a condition. The
// workers run on a store clock that stands still (`--now`), so no lease runs out because
// the machine is slow (a lease renewed past its first end, on a clock the test moves, is
// tests/worker/heartbeat.test.ts). PostgreSQL runs under the rule of
// tests/support/backends.ts.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claim, enqueue, show, status } from '@onceq/core';
import { queueSnapshot } from '@onceq/core/admin';
import { forEachBackend } from '../support/backends.ts';
import { runOnceq } from '../support/cli.ts';
import {
  type SharedStore,
  SLOW_HANDLER,
  sharedStore,
  sleepyBatch,
  startWorker,
  storeNow,
  WORKER_TEST_PASSWORD,
} from '../support/worker-process.ts';

// Real processes on a shared, loaded machine: a generous bound (every wait is for a condition).
setDefaultTimeout(120_000);

forEachBackend('onceq worker', ({ name: backend }) => {
  describe(`${backend}: onceq worker`, () => {
    let shared: SharedStore;
    beforeEach(async () => {
      shared = await sharedStore(backend);
    });
    afterEach(async () => {
      await shared.cleanup();
    });
    const worker = (...args: string[]) =>
      startWorker(['--db', shared.db, '--handler', SLOW_HANDLER, ...args], shared.cwd);

    test('SIGTERM during a long handler: it completes once, unstarted claims are released unspent and claimable at once, exit 0', async () => {
      const { store } = shared;
      const gate = join(shared.cwd, 'gate-sigterm');
      await enqueue(store, sleepyBatch([{ gate }, 0, 0]));
      const w = worker('--lease', '10', '--batch', '10', '--now', String(await storeNow(store)));
      await w.waitForLog(/handler-start E0001 g1/);
      w.signal('SIGTERM');
      // The handler returns only once the worker has taken the signal in.
      await w.waitForLog(/no new claims/);
      writeFileSync(gate, '');
      expect(await w.exited()).toBe(0);
      expect(w.stdout()).toContain('worker stopped gracefully');
      expect(w.stdout()).toContain('1 done');
      expect(w.stdout()).toContain('2 released');
      expect(w.stderr()).not.toContain('handler-start E0002');
      expect(w.stderr()).toContain('worker started on');
      expect(w.stdout() + w.stderr()).not.toContain(WORKER_TEST_PASSWORD);
      const first = await show(store, 'E0001');
      expect([first.state, first.attempts, first.effect?.amountCents]).toEqual(['done', 1, 100]);
      for (const id of ['E0002', 'E0003']) {
        const m = await show(store, id);
        expect([m.state, m.attempts, m.generation, m.leaseUntil]).toEqual(['ready', 0, 1, null]);
      }
      // Another worker claims them at once, as a first attempt of a new generation.
      const next = await claim(store);
      expect([next?.eventId, next?.attempt, next?.generation]).toEqual(['E0002', 1, 2]);
    });

    test('a second SIGTERM exits at once; the abandoned lease is recovered later as a silent death', async () => {
      const { store } = shared;
      await enqueue(store, sleepyBatch([60_000]));
      const w = worker('--lease', '2', '--now', String(await storeNow(store)));
      await w.waitForLog(/handler-start E0001 g1/);
      w.signal('SIGTERM');
      await w.waitForLog(/stopping: SIGTERM/);
      w.signal('SIGTERM');
      expect(await w.exited()).toBe(1);
      expect(w.stdout()).toContain('worker stopped at once');
      expect(w.stdout()).toContain('1 message abandoned');
      const held = await show(store, 'E0001');
      expect([held.state, held.attempts, held.generation, held.effect]).toEqual([
        'leased',
        1,
        1,
        null,
      ]);
      // At its lease_until a claim recovers it: the attempt counts, a new generation runs it.
      const recovered = await runOnceq(
        ['claim', '--json', '--db', shared.db, '--now', String(held.leaseUntil)],
        shared.cwd,
      );
      expect(recovered.code).toBe(0);
      expect(JSON.parse(recovered.stdout)).toMatchObject({
        event_id: 'E0001',
        generation: 2,
        attempt: 2,
      });
    });

    test('heartbeats renew the lease while a handler runs: done exactly once; /metrics equals status', async () => {
      const { store } = shared;
      const gate = join(shared.cwd, 'gate-heartbeats');
      await enqueue(store, sleepyBatch([{ gate }, 0]));
      const now = String(await storeNow(store));
      const w = worker(
        '--lease',
        String(HEARTBEAT_LEASE_SECONDS),
        '--batch',
        '1',
        '--metrics-port',
        '0',
        '--log-format',
        'json',
        '--json',
        '--now',
        now,
      );
      await w.waitForLog(/"event":"metrics"/);
      const port = Number(/"port":(\d+)/.exec(w.stderr())?.[1]);
      await w.waitForLog(/handler-start E0001 g1/);
      const claimed = await show(store, 'E0001');
      expect([claimed.state, claimed.generation]).toEqual(['leased', 1]);
      // Two beats renewed the lease (on the still clock, to the same lease_until).
      await untilMetric(port, 'onceq_lease_extended_total', 2);
      const renewed = await show(store, 'E0001');
      expect([renewed.state, renewed.generation, renewed.leaseUntil]).toEqual([
        'leased',
        1,
        Number(now) + HEARTBEAT_LEASE_SECONDS,
      ]);
      writeFileSync(gate, '');
      await w.waitForLog(/"event":"batch".*"claimed":1,"done":1/, 30_000);
      await w.waitForLog(/handler-start E0002 g1/);
      await w.waitForLog(/"done":1.*"done":1/s);
      const first = await show(store, 'E0001');
      expect([first.state, first.attempts, first.generation, first.effect?.amountCents]).toEqual([
        'done',
        1,
        1,
        100,
      ]);

      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const metrics = parsePrometheus(text);
      const counts = await status(store);
      for (const state of ['ready', 'leased', 'done', 'dead'] as const) {
        expect(metrics.get(`onceq_messages{state="${state}"}`)).toBe(counts.messages[state]);
      }
      expect(metrics.get('onceq_dlq_messages')).toBe(counts.messages.dead);
      expect(metrics.get('onceq_processed_total{queue="default",outcome="done"}')).toBe(2);
      expect(metrics.get('onceq_processed_total{queue="default",outcome="lost"}')).toBe(0);
      expect(metrics.get('onceq_lease_extended_total')).toBeGreaterThanOrEqual(2);
      expect(metrics.get('onceq_handler_to_ack_seconds_count')).toBe(2);
      expect(metrics.get('onceq_queue_wait_seconds_count{queue="default"}')).toBe(2);
      const snap = await queueSnapshot(store);
      expect(metrics.get('onceq_oldest_ready_age_seconds')).toBe(
        snap.oldestReadyAt === null ? 0 : snap.now - snap.oldestReadyAt,
      );

      w.signal('SIGINT');
      expect(await w.exited()).toBe(0);
      const summary = JSON.parse(w.stdout().trim().split('\n').at(-1) as string);
      expect(summary).toMatchObject({ graceful: true, claimed: 2, done: 2, lost: 0 });
      expect(summary.extended).toBeGreaterThanOrEqual(2);
    });

    test('a refused extension aborts the handler, and its late ACK is refused', async () => {
      const { store } = shared;
      await enqueue(store, sleepyBatch([30_000]));
      // On a clock that stands still the lease holds until the fail below: the refusal
      // the next heartbeat gets is that write's, never an expiry.
      const now = String(await storeNow(store));
      const w = worker('--lease', '2', '--now', now);
      await w.waitForLog(/handler-start E0001 g1/);
      // Someone else settles the message under the same generation: the lease is gone.
      const failed = await runOnceq(
        [
          'fail',
          'E0001',
          '--generation',
          '1',
          '--permanent',
          '--code',
          'operator',
          '--db',
          shared.db,
          '--now',
          now,
        ],
        shared.cwd,
      );
      expect(failed.code).toBe(0);
      await w.waitForLog(/handler-aborted E0001/);
      await w.waitForLog(/batch: claimed 1: 0 done, 0 retried, 0 dead, 1 lost/);
      expect(w.stderr()).toMatch(
        /lease_lost: lease lost for E0001 generation 1: the message is dead/,
      );
      expect(w.stderr()).toContain('handler-end E0001'); // it did try to finish
      w.signal('SIGTERM');
      expect(await w.exited()).toBe(0);
      const m = await show(store, 'E0001');
      expect([m.state, m.lastErrorCode, m.effect]).toEqual(['dead', 'operator', null]);
    });
  });
});

/** The sample lines of a Prometheus text exposition, by name and labels. */
function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+?(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`);
    samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

/** The lease of the heartbeat test: a beat every second. */
const HEARTBEAT_LEASE_SECONDS = 3;

/** Resolves once the worker's `/metrics` shows `name` at `atLeast` or more (bounded: 60 s). */
async function untilMetric(port: number, name: string, atLeast: number): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    if ((parsePrometheus(text).get(name) ?? 0) >= atLeast) return;
    if (performance.now() > deadline) throw new Error(`${name} never reached ${atLeast}:\n${text}`);
    await Bun.sleep(50);
  }
}
