import { describe, expect, test } from 'bun:test';
import { apply, enqueue, show, status, type WorkSummary, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { type BackendFactory, nEvents } from '../support/factories.ts';
import {
  childJson,
  effectsOf,
  expectExit,
  freshStore,
  mustClaim,
  snapshot,
  startChild,
  storeArgs,
} from './harness.ts';

/** Children are told to start this long from now, so both are up before either works. */
const START_DELAY_MS = 400;

export function processesSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: separate processes`, () => {
    const env = freshStore(factory);

    test('two competing client processes claim at the same time: every message exactly once, no error', async () => {
      const e = env();
      const events = nEvents(100);
      await enqueue(e.store, events.jsonl);
      const startAt = String(Date.now() + START_DELAY_MS);
      const args = [...storeArgs(e, 1000), '--start-at', startAt];
      const results = await Promise.all([
        startChild('child-claimer.ts', args),
        startChild('child-claimer.ts', args),
      ]);
      const [a, b] = results.map((r) => childJson<string[]>(r)) as [string[], string[]];
      const all = [...a, ...b].sort();
      expect(all).toEqual(events.ids.map((id) => `${id}@1`));
      expect((await status(e.store)).messages).toEqual({ ready: 0, leased: 100, done: 0, dead: 0 });
    });

    test('twenty events with two consumer processes: every effect exactly once, total correct', async () => {
      const e = env();
      const events = nEvents(20);
      await enqueue(e.store, events.jsonl);
      const args = [...storeArgs(e, 1000), '--start-at', String(Date.now() + START_DELAY_MS)];
      const results = await Promise.all([
        startChild('child-consumer.ts', args),
        startChild('child-consumer.ts', args),
      ]);
      const summaries = results.map((r) => childJson<WorkSummary>(r));
      expect(summaries.reduce((n, s) => n + s.done, 0)).toBe(20);
      expect(summaries.reduce((n, s) => n + s.claimed, 0)).toBe(20);
      expect(summaries.map((s) => s.lost + s.retried + s.dead)).toEqual([0, 0]);
      expect((await effectsOf(e.store)).map((x) => x.eventId)).toEqual(events.ids);
      const report = await status(e.store);
      expect(report).toMatchObject({ effects: 20, total: events.total });
      expect(report.messages).toEqual({ ready: 0, leased: 0, done: 20, dead: 0 });
      // Generation 1 everywhere: no message was ever claimed twice.
      const { messages } = await snapshot(e.store);
      expect(new Set(messages.map((m) => Number(m.generation)))).toEqual(new Set([1]));
    });

    test('a worker process that exits (86) between the effect INSERT and COMMIT leaves no effect; the next generation completes it once', async () => {
      const e = env();
      const { store, clock } = e;
      await enqueue(store, nEvents(3).jsonl);
      await work(store, handlers.v1, { max: 2 }); // E0001, E0002 done: E0003 is next
      const crash = await startChild('child-crash.ts', [
        ...storeArgs(e, 1000),
        '--lease',
        '2',
        '--expect',
        'E0003',
      ]);
      expectExit(crash, 86);
      await e.afterCrash();

      expect((await effectsOf(store)).map((x) => x.eventId)).toEqual(['E0001', 'E0002']);
      expect(await show(store, 'E0003')).toMatchObject({
        state: 'leased',
        generation: 1,
        attempts: 1,
        leaseUntil: 1002,
        effect: null,
      });
      if (e.integrityCheck) expect(await e.integrityCheck()).toBe('ok');

      clock.set(1002);
      const retry = await mustClaim(store);
      expect([retry.eventId, retry.generation, retry.attempt]).toEqual(['E0003', 2, 2]);
      await apply(store, retry, handlers.v1);
      const effects = await effectsOf(store);
      expect(effects.filter((x) => x.eventId === 'E0003')).toEqual([
        { eventId: 'E0003', category: 'bag', amountCents: 300 },
      ]);
      expect(await status(store)).toMatchObject({ effects: 3, total: 600 });
    });
  });
}
