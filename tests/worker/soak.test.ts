// The soak, 130 s per backend (both at once): a real `onceq worker` under a steady
// producer, payloads pruned and tombstones forgotten every 5 s, sampled every 5 s.
// The first 80 s are the warm-up: the store fills its window within 25 s, but
// PostgreSQL's relations reach their size only after several vacuums have freed the
// space the next ones reuse, sometimes well past the first minute, and growth toward
// that plateau is not a trend. Over the ten samples after it the store's size and the
// SQLite WAL must be flat, the worker must keep up with the producer, and every event
// must be applied exactly once. The store's size is flat when it moves less than 10 %
// over those samples, or when it grew by less than an eighth of what keeping the
// events produced meanwhile would have cost: PostgreSQL extends a relation many pages
// at a time, and on a store of about a megabyte one such step in a minute is 10 %,
// where a store that kept its events would grow several times that. The worker's RSS is sampled but judged only by the
// bench's 30-minute soak: in one minute of steady state it follows the garbage
// collector's sawtooth (up 15 % before a collection), not a trend. Speed is the bench's
// to judge (`bun run bench --only soak`: the p99 and the applied rate per interval,
// which on a shared machine move with its load), so here the throughput is judged over
// the whole steady part against the produced rate. Bounded throughout: the soak stops
// its worker by pid and waits at most a minute for the backlog.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import {
  relativeDrift,
  runSoak,
  type SoakResult,
  type SoakSample,
} from '@onceq/bench/scenarios/soak.ts';
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

/**
 * Whether the store's size is flat over the samples `steady`: a move under {@link FLAT},
 * or growth under an eighth of what the events produced meanwhile would cost at the
 * bytes per stored event of the first sample (what a store that frees nothing adds).
 */
function storeFlat(steady: readonly SoakSample[], drift: number, rate: number): boolean {
  if (Math.abs(drift) < FLAT) return true;
  const first = steady[0];
  const last = steady.at(-1);
  if (first === undefined || last === undefined || first.events <= 0) return false;
  const produced = rate * (last.atSeconds - first.atSeconds);
  const kept = produced * (first.storeBytes / first.events);
  return last.storeBytes - first.storeBytes < kept / 8;
}

describe('storeFlat', () => {
  const sample = (atSeconds: number, storeBytes: number): SoakSample => ({
    atSeconds,
    applied: 50,
    p99Ms: 10,
    rssBytes: 1,
    walBytes: null,
    storeBytes,
    events: 1000,
  });
  const series = (sizes: readonly number[]) => sizes.map((b, i) => sample(85 + 5 * i, b));

  test('one step of a relation extended at once is flat; a store that keeps its events is not', () => {
    const step = series([
      1_237_000, 1_245_000, 1_237_000, 1_245_000, 1_278_000, 1_335_000, 1_343_000, 1_343_000,
      1_343_000, 1_343_000,
    ]);
    const ys = step.map((s) => s.storeBytes);
    expect(Math.abs(relativeDrift(ys))).toBeGreaterThan(FLAT);
    expect(storeFlat(step, relativeDrift(ys), 50)).toBe(true);
    // Keeping each event as a bare tombstone of 250 bytes: 50 a second for 45 s.
    const kept = series(Array.from({ length: 10 }, (_, i) => 1_240_000 + i * 5 * 50 * 250));
    const keptYs = kept.map((s) => s.storeBytes);
    expect(storeFlat(kept, relativeDrift(keptYs), 50)).toBe(false);
  });
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
  const drift = r.drift.storeBytes ?? Number.NaN;
  expect({ storeBytes: storeFlat(steady, drift, SOAK.rate), drift }, where).toEqual({
    storeBytes: true,
    drift,
  });
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
