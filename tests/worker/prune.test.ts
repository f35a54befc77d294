// Prune alongside a worker: `Worker`'s prune schedule on the model clock (both backends),
// prune's abort between chunks and its duty-cycle bounds, and `onceq worker --prune-every`
// as a real process. Every wait is a bounded wait for a condition.
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import { join } from 'node:path';
import { enqueue, show, status, Worker, type WorkerLog, work } from '@onceq/core';
import { forgottenBefore, PruneArgumentError, prune } from '@onceq/core/admin';
import { localTime } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { enqueueDemo, freshStore, rejection } from '../conformance/harness.ts';
import { forEachBackend } from '../support/backends.ts';
import { cliSandbox, DEMO_JSONL } from '../support/cli.ts';
import { type BackendFactory, batch, line, paid, sqliteFactory } from '../support/factories.ts';
import { startWorker } from '../support/worker-process.ts';

setDefaultTimeout(120_000);

/** Polls `condition` every 10 ms until true; throws after `timeoutMs`. */
async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
) {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function recordingLog() {
  const lines: { event: string; message: string; fields: Record<string, unknown> }[] = [];
  const log: WorkerLog = {
    write(event, message, fields = {}) {
      lines.push({ event, message, fields });
    },
  };
  return { log, lines, prunes: () => lines.filter((l) => l.event === 'prune') };
}

function scheduleSuite(factory: BackendFactory) {
  describe(`${factory.name}: worker prune schedule`, () => {
    const env = freshStore(factory);

    test('prunes at start and then every interval on the store clock, between claims, and logs what it pruned', async () => {
      const { store, clock } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1); // E0001–E0003 done, E0004 dead, at 1000
      const before = await status(store);
      const { log, prunes } = recordingLog();
      const worker = new Worker(store, handlers.v1, {
        pollMaxMs: 20,
        log,
        prune: { everySeconds: 600, doneOlderThanSeconds: 3600 },
      });
      await worker.start();
      try {
        // At start (1000): nothing is an hour old yet.
        await until(() => prunes().length === 1, 'the first prune');
        expect(prunes()[0]?.fields).toMatchObject({ done: 0, done_before: 1000 - 3600 });
        // Before the interval is up, no second prune, however often the loop turns.
        clock.advance(599);
        await enqueue(store, batch(line('E0005', paid('bag', 700))));
        await until(async () => (await show(store, 'E0005')).state === 'done', 'E0005 processed');
        expect(prunes().length).toBe(1);
        // An hour later: the next tick prunes the three old done messages, not the new one
        // (and never the dead one: only --done-older-than was given).
        clock.advance(3600);
        await until(() => prunes().length === 2, 'the second prune');
        expect(prunes()[1]?.fields).toMatchObject({ done: 3, dead: 0 });
        expect(prunes()[1]?.message).toMatch(
          /^pruned 3 done \(finished before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\) in \d+ ms; next prune in 600 s$/,
        );
        for (const id of ['E0001', 'E0002', 'E0003'])
          expect((await show(store, id)).prunedAt).toBe(1000 + 599 + 3600);
        expect((await show(store, 'E0004')).prunedAt).toBeNull();
        expect((await show(store, 'E0005')).prunedAt).toBeNull();
        // Prune moves no money and no state.
        const after = await status(store);
        expect(after.total).toBe(before.total + 700);
        expect(after.messages).toEqual({ ...before.messages, done: before.messages.done + 1 });
      } finally {
        await worker.stop();
      }
    });

    test('with a dedup window the scheduled prune also forgets old tombstones, records the horizon and logs it', async () => {
      const { store, clock } = env();
      await enqueueDemo(store);
      await work(store, handlers.v1); // E0001–E0003 done, E0004 dead, at 1000
      clock.advance(1);
      await prune(store, { doneOlderThanSeconds: 0, deadOlderThanSeconds: 0 });
      clock.advance(4 * 86_400 - 1);
      const { log, prunes } = recordingLog();
      const worker = new Worker(store, handlers.v1, {
        pollMaxMs: 20,
        log,
        prune: { everySeconds: 600, forgetOlderThanSeconds: 3 * 86_400 },
      });
      await worker.start();
      try {
        await until(() => prunes().length === 1, 'the first prune');
        const horizon = 1000 + 86_400;
        expect(prunes()[0]?.fields).toMatchObject({ forgotten: 4, forgotten_before: horizon });
        expect(prunes()[0]?.message).toContain(
          `forgot 4 tombstones (finished before ${localTime(horizon)})`,
        );
        expect((await status(store)).messages).toEqual({ ready: 0, leased: 0, done: 0, dead: 0 });
        expect(await forgottenBefore(store)).toBe(horizon);
      } finally {
        await worker.stop();
      }
    });

    test('a dedup window below the 3-day floor is refused when the worker is made', () => {
      const { store } = env();
      expect(
        () =>
          new Worker(store, handlers.v1, {
            prune: { everySeconds: 600, forgetOlderThanSeconds: 86_400 },
          }),
      ).toThrow(PruneArgumentError);
    });
  });
}

forEachBackend('worker prune schedule', scheduleSuite);

describe('prune pacing', () => {
  const env = freshStore(sqliteFactory);

  test('an aborted signal stops prune between chunks; a run afterwards finishes the rest', async () => {
    const { store, clock } = env();
    await enqueueDemo(store);
    await work(store, handlers.v1);
    clock.advance(7200);
    const controller = new AbortController();
    const first = await prune(store, {
      doneOlderThanSeconds: 3600,
      chunkSize: 1,
      signal: controller.signal,
      onChunk: () => controller.abort(),
    });
    expect(first.done).toBe(1);
    expect((await prune(store, { doneOlderThanSeconds: 3600, chunkSize: 1 })).done).toBe(2);
  });

  test('a duty cycle outside 0.01–1 is refused before anything is pruned', async () => {
    const { store, clock } = env();
    await enqueueDemo(store);
    await work(store, handlers.v1);
    clock.advance(7200);
    for (const dutyCycle of [0, 1.5, Number.NaN]) {
      const error = await rejection(
        prune(store, { doneOlderThanSeconds: 3600, dutyCycle }),
        PruneArgumentError,
      );
      expect(error.message).toContain('duty cycle');
    }
    expect((await show(store, 'E0001')).prunedAt).toBeNull();
  });
});

describe('onceq worker --prune-every (real process)', () => {
  test('prunes old done messages at start and logs it; an age flag without --prune-every is a usage error', async () => {
    const box = cliSandbox();
    try {
      expect((await box.run(['enqueue', DEMO_JSONL, '--now', '1000'])).code).toBe(0);
      expect((await box.run(['work', '--now', '1000'])).code).toBe(0);
      const w = startWorker(
        [
          '--db',
          join(box.cwd, 'onceq.db'),
          '--now',
          '8200',
          '--prune-every',
          '1h',
          '--done-older-than',
          '1h',
        ],
        box.cwd,
      );
      const before = localTime(4600).replace(/[-:]/g, '\\$&');
      await w.waitForLog(new RegExp(`prune: pruned 3 done \\(finished before ${before}\\)`));
      expect(w.stderr()).toContain('pruning every 3600 s: done older than 3600 s');
      w.signal('SIGTERM');
      expect(await w.exited()).toBe(0);
      const shown = await box.run(['show', 'E0001', '--json', '--now', '8200']);
      expect(JSON.parse(shown.stdout)).toMatchObject({ pruned_at: 8200 });
      const usage = await box.run(['worker', '--done-older-than', '1d']);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toStartWith('onceq: --done-older-than needs --prune-every');
    } finally {
      box.cleanup();
    }
  });
});
