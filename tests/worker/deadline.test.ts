// A handler that never returns, on both backends, as real processes: `--handler-timeout`
// gives it a deadline (its signal aborted, a temporary `handler_timeout` failure), and
// without one `/healthz` reports the worker stuck once it has settled nothing for three
// leases while holding work. Every wait is a bounded wait for an event.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, show } from '@onceq/core';
import { forEachBackend } from '../support/backends.ts';
import { cliSandbox } from '../support/cli.ts';
import {
  type SharedStore,
  STUCK_HANDLER,
  sharedStore,
  startOnceq,
  startWorker,
  storeNow,
} from '../support/worker-process.ts';

// Real processes on a shared, loaded machine: a generous bound (every wait is for a condition).
setDefaultTimeout(120_000);

/**
 * `E0001…` events: `stuck` ones never return under the stuck handler (`timer` ones also
 * keep an interval of their own running), `quick` ones are done at once.
 */
function events(kinds: readonly ('stuck' | 'quick' | 'timer')[]): string {
  return kinds
    .map((kind, i) => {
      const payload = {
        category: 'book',
        amount_cents: 100,
        ...(kind === 'quick' ? { done: true } : {}),
        ...(kind === 'timer' ? { timer: true } : {}),
      };
      return `${JSON.stringify({ event_id: `E${String(i + 1).padStart(4, '0')}`, payload })}\n`;
    })
    .join('');
}

forEachBackend('a handler that never returns', ({ name: backend }) => {
  describe(`${backend}: a handler that never returns`, () => {
    let shared: SharedStore;
    beforeEach(async () => {
      shared = await sharedStore(backend);
    });
    afterEach(async () => {
      await shared.cleanup();
    });

    test('--handler-timeout aborts its signal and retries it as handler_timeout; the other message is done and work ends', async () => {
      const { store } = shared;
      await enqueue(store, events(['stuck', 'quick']));
      // On a store clock that stands still the retry's backoff never ends during the run,
      // however long the machine takes between the timeout and the last claim.
      const now = String(await storeNow(store));
      const w = startOnceq(
        [
          ...['work', '--db', shared.db, '--handler', STUCK_HANDLER],
          ...['--handler-timeout', '1', '--batch', '1', '--now', now],
        ],
        shared.cwd,
      );
      expect(await w.exited(60_000)).toBe(0);
      expect(w.stderr()).toContain(
        'handler-aborted E0001 the handler did not return within 1 s; its signal was aborted',
      );
      expect(w.stdout()).toContain('claimed 2 messages: 1 done, 1 retried, 0 dead');
      const stuck = await show(store, 'E0001');
      expect([stuck.state, stuck.attempts, stuck.lastErrorCode, stuck.effect]).toEqual([
        'ready',
        1,
        'handler_timeout',
        null,
      ]);
      expect(stuck.lastErrorDetail).toContain('did not return within 1 s');
      expect((await show(store, 'E0002')).state).toBe('done');
    });

    test('a handler past its deadline that keeps a timer of its own does not keep work alive', async () => {
      const { store } = shared;
      await enqueue(store, events(['timer']));
      const now = String(await storeNow(store));
      const w = startOnceq(
        [
          ...['work', '--db', shared.db, '--handler', STUCK_HANDLER],
          ...['--handler-timeout', '1', '--now', now],
        ],
        shared.cwd,
      );
      expect(await w.exited(60_000)).toBe(0);
      expect(w.stdout()).toContain('claimed 1 message: 0 done, 1 retried, 0 dead');
      expect(w.stderr()).toContain(
        'onceq: 1 handler call ignored the aborted signal and still run; exiting without waiting for it',
      );
      expect((await show(store, 'E0001')).lastErrorCode).toBe('handler_timeout');
    });

    test('without a deadline, /healthz turns 503 "stuck" once nothing was settled for three leases while holding work, its lease renewed meanwhile', async () => {
      const { store } = shared;
      await enqueue(store, events(['stuck']));
      // A store clock that stands still: the lease cannot run out under a slow machine,
      // so what the test sees is the stuck report, never a lost lease.
      const now = String(await storeNow(store));
      const w = startWorker(
        [
          ...['--db', shared.db, '--handler', STUCK_HANDLER, '--lease', '2'],
          ...['--metrics-port', '0', '--now', now],
        ],
        shared.cwd,
      );
      const serving = /serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/;
      await w.waitForLog(serving);
      const port = Number(serving.exec(w.stderr())?.[1]);
      await w.waitForLog(/handler-start E0001 g1/);
      const deadline = Date.now() + 60_000;
      let health = { status: 200, text: '' };
      while (health.status === 200 && Date.now() < deadline) {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        health = { status: response.status, text: await response.text() };
        if (health.status === 200) await Bun.sleep(100);
      }
      expect(health.status).toBe(503);
      expect(health.text).toMatch(
        /^stuck: settled nothing for \d+ s \(3 leases of 2 s\) while holding 1 message; handlers still running: E0001\n$/,
      );
      // Heartbeats renewed the lease meanwhile, and the same claim holds it.
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(Number(/^onceq_lease_extended_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      const held = await show(store, 'E0001');
      expect([held.state, held.generation]).toEqual(['leased', 1]);
      expect(w.stderr()).not.toContain('lease_lost');
      w.signal('SIGTERM');
      await w.waitForLog(/stopping: SIGTERM/);
      w.signal('SIGTERM');
      expect(await w.exited()).toBe(1);
    });
  });
});

describe('complete and redrive --dry-run with a handler that never returns', () => {
  test('--handler-timeout ends them: complete retries it as handler_timeout, the preview counts it as not accepted', async () => {
    const box = cliSandbox();
    try {
      const at = ['--now', '1000'];
      writeFileSync(join(box.cwd, 'events.jsonl'), events(['stuck']));
      expect((await box.run(['enqueue', 'events.jsonl', ...at])).code).toBe(0);
      const claimed = JSON.parse((await box.run(['claim', '--json', ...at])).stdout);
      const completed = await box.run([
        'complete',
        'E0001',
        '--generation',
        String(claimed.generation),
        '--handler',
        STUCK_HANDLER,
        '--handler-timeout',
        '1',
        '--json',
        ...at,
      ]);
      expect(completed.code).toBe(0);
      expect(JSON.parse(completed.stdout)).toMatchObject({
        event_id: 'E0001',
        outcome: 'retry',
        code: 'handler_timeout',
      });
      expect(completed.stderr).toContain('handler-aborted E0001');

      const again = JSON.parse((await box.run(['claim', '--json', '--now', '1002'])).stdout);
      const failed = await box.run([
        'fail',
        'E0001',
        '--generation',
        String(again.generation),
        '--permanent',
        '--now',
        '1002',
      ]);
      expect(failed.code).toBe(0);
      const preview = await box.run([
        'redrive',
        'E0001',
        '--dry-run',
        '--handler',
        STUCK_HANDLER,
        '--handler-timeout',
        '1',
        '--json',
        '--now',
        '1002',
      ]);
      expect(preview.code).toBe(0);
      expect(JSON.stringify(JSON.parse(preview.stdout))).toContain('handler_timeout');
      expect((await box.run(['redrive', 'E0001', '--handler-timeout', '1'])).stderr).toContain(
        '--handler-timeout only applies with --dry-run or --accepted-by',
      );
    } finally {
      box.cleanup();
    }
  });
});
