// The soak, 130 s per backend (both at once): a real `onceq worker` under a steady
// producer, payloads pruned and tombstones forgotten every 5 s, sampled every 5 s.
// The first 80 s are the warm-up: the store fills its window within 25 s, but
// PostgreSQL's relations reach their size only after several vacuums have freed the
// space the next ones reuse, sometimes well past the first minute, and growth toward
// that plateau is not a trend. Over the ten samples after it the store's size and the
// SQLite WAL must be flat, the worker must keep up with the producer, and every event
// must be applied exactly once. The worker's RSS is sampled but judged only by the
// bench's 30-minute soak: in one minute of steady state it follows the garbage
// collector's sawtooth (up 15 % before a collection), not a trend. Speed is the bench's
// to judge (`bun run bench --only soak`: the p99 and the applied rate per interval,
// which on a shared machine move with its load), so here the throughput is judged over
// the whole steady part against the produced rate. Bounded throughout: the soak stops
// its worker by pid and waits at most a minute for the backlog.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { relativeDrift, runSoak, type SoakResult } from '@onceq/bench/scenarios/soak.ts';
import { onPostgres, postgresPlan } from '../support/backends.ts';
import { type SharedStore, sharedStore } from '../support/worker-process.ts';

setDefaultTimeout(300_000);

const FLAT = 0.1;
const SOAK = { durationMs: 130_000, intervalMs: 5_000, rate: 50, warmUpMs: 80_000 };

describe('relativeDrift', () => {
  test('is the least-squares move over the span as a share of the mean', () => {
    expect(relativeDrift([100, 100, 100, 100])).toBe(0);
    // 100 → 130 in equal steps: a move of 30 on a mean of 115.
    expect(relativeDrift([100, 110, 120, 130])).toBeCloseTo(30 / 115, 6);
    expect(relativeDrift([130, 120, 110, 100])).toBeCloseTo(-30 / 115, 6);
  });

  test('tells noise from a trend', () => {
    expect(Math.abs(relativeDrift([100, 104, 97, 103, 98, 102]))).toBeLessThan(FLAT);
    expect(relativeDrift([100, 103, 106, 109, 112, 115])).toBeGreaterThan(FLAT);
  });
});

const stores: SharedStore[] = [];
const soaks = new Map<string, Promise<SoakResult>>();

beforeAll(async () => {
  const backends = postgresPlan().run ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
  for (const backend of backends) {
    const shared = await sharedStore(backend);
    stores.push(shared);
    // The test's own connection is not the soak's: the soak opens the store itself.
    soaks.set(backend, runSoak({ db: shared.db, ...SOAK }));
  }
});

afterAll(async () => {
  await Promise.allSettled(soaks.values());
  for (const shared of stores) await shared.cleanup();
});

function expectSteady(r: SoakResult) {
  const where = `samples: ${JSON.stringify(r.samples)}\nworker log:\n${r.workerLogTail.slice(-2000)}`;
  expect(r.workerExit, where).toBe(0);
  expect(r.produced, where).toBeGreaterThan(0);
  expect(r.appliedRows, where).toBe(r.produced);
  expect(r.appliedDistinct, where).toBe(r.produced);
  expect(r.exact).toBe(true);
  expect(r.samples.length - r.warmUp, where).toBeGreaterThanOrEqual(10);
  const steady = r.samples.slice(r.warmUp);
  const applied = steady.reduce((sum, s) => sum + s.applied, 0) / steady.length;
  expect(Math.abs(applied / SOAK.rate - 1), where).toBeLessThan(FLAT);
  for (const series of ['storeBytes'] as const) {
    expect({ series, drift: Math.abs(r.drift[series] ?? Number.NaN) < FLAT }, where).toEqual({
      series,
      drift: true,
    });
  }
}

test('sqlite: a worker under a steady producer stays flat and exact', async () => {
  const r = (await soaks.get('sqlite')) as SoakResult;
  expectSteady(r);
  expect(Math.abs(r.drift.walBytes ?? Number.NaN)).toBeLessThan(FLAT);
});

onPostgres('soak', () => {
  test('postgres: a worker under a steady producer stays flat and exact', async () => {
    expectSteady((await soaks.get('postgres')) as SoakResult);
  });
});
