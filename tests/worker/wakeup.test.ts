/**
 * The worker's idle wait (worker/wakeup.ts): a wake ends a sleep at once, except for a
 * worker that lost its last race (woken, nothing to claim), whose next wake waits a
 * jittered delay; work found makes it react at once again; a stop interrupts at once.
 */
import { expect, test } from 'bun:test';
import { Wakeup } from '@onceq/core/internal';

/** Whether `promise` has settled after the pending microtasks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => {
    done = true;
  });
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
}

test('a wake ends the sleep at once while the worker has not lost a race', async () => {
  const wakeup = new Wakeup({ minMs: 60_000, maxMs: 60_000 });
  const sleeping = wakeup.sleep(null);
  wakeup.wake();
  expect(await settled(sleeping)).toBe(true);
  expect(await sleeping).toBe(true);
});

test('after a lost race a wake is delayed, and still ends the sleep', async () => {
  const wakeup = new Wakeup({ minMs: 60_000, maxMs: 60_000, random: () => 0 });
  wakeup.lostRace();
  expect(wakeup.backedOff).toBe(true);
  const sleeping = wakeup.sleep(null);
  wakeup.wake();
  expect(await settled(sleeping)).toBe(false);
  expect(await sleeping).toBe(true);
});

test('a stop interrupts a backed-off sleep at once', async () => {
  const wakeup = new Wakeup({ minMs: 60_000, maxMs: 60_000 });
  wakeup.lostRace();
  const sleeping = wakeup.sleep(null);
  wakeup.wake();
  wakeup.interrupt();
  expect(await settled(sleeping)).toBe(true);
});

test('work found makes the next wake immediate again', async () => {
  const wakeup = new Wakeup({ minMs: 60_000, maxMs: 60_000 });
  for (let i = 0; i < 10; i++) wakeup.lostRace();
  wakeup.busy();
  expect(wakeup.backedOff).toBe(false);
  const sleeping = wakeup.sleep(null);
  wakeup.wake();
  expect(await settled(sleeping)).toBe(true);
});
