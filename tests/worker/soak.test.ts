// The soak, two minutes per backend (both at once): a real `onceq worker` under a steady
// producer, payloads pruned and tombstones forgotten every 5 s, sampled every 5 s.
// After the warm-up every series but the latency must be flat (throughput, the worker's
// RSS, the SQLite WAL, the store's size) and every event applied exactly once. The p99
// latency is reported, not judged: it measures the machine (`bun run bench --only soak`
// judges it). Bounded throughout: the soak stops its worker by pid and waits at most a
// minute for the backlog.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { relativeDrift, runSoak, type SoakResult } from '@onceq/bench/scenarios/soak.ts';
import { onPostgres, postgresPlan } from '../support/backends.ts';
import { type SharedStore, sharedStore } from '../support/worker-process.ts';

setDefaultTimeout(300_000);

const FLAT = 0.1;
const SOAK = { durationMs: 120_000, intervalMs: 5_000, rate: 100 };

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
  expect(r.samples.length - r.warmUp, where).toBeGreaterThanOrEqual(5);
  for (const series of ['applied', 'rssBytes', 'storeBytes'] as const) {
    expect({ series, drift: Math.abs(r.drift[series] ?? Number.NaN) < FLAT }, where).toEqual({
      series,
      drift: true,
    });
  }
}

test('sqlite: two minutes of a worker under a steady producer stay flat and exact', async () => {
  const r = (await soaks.get('sqlite')) as SoakResult;
  expectSteady(r);
  expect(Math.abs(r.drift.walBytes ?? Number.NaN)).toBeLessThan(FLAT);
});

onPostgres('soak', () => {
  test('postgres: two minutes of a worker under a steady producer stay flat and exact', async () => {
    expectSteady((await soaks.get('postgres')) as SoakResult);
  });
});
