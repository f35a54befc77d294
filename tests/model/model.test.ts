/**
 * Model-based tests (fast-check): random sequences of enqueue (duplicates, conflicts),
 * claim, claimMany, apply, complete of a batch with mixed outcomes, fail with valid and stale
 * leases, clock moves onto and across lease and backoff boundaries, crashes before and
 * after COMMIT, and redrive under handler v1 or v2, run on the real store (a SQLite file,
 * a PostgreSQL schema; only the clock is modelled) and on the reference model of
 * tests/model/reference.ts. Invariants and agreement are checked after every step.
 *
 * `ONCEQ_MODEL_RUNS` (default 30) sets the runs per backend, `ONCEQ_MODEL_SEED` replays
 * a seed. A failure prints fast-check's seed, path and shrunk step sequence.
 */
import { afterAll, beforeAll, describe, test } from 'bun:test';
import type { Database } from '@onceq/core/internal';
import fc from 'fast-check';
import type { Kysely } from 'kysely';
import { forEachBackend } from '../support/backends.ts';
import {
  type BackendFactory,
  type OpenedStore,
  T0,
  type TestClock,
  testClock,
} from '../support/factories.ts';
import { openRawDb } from '../support/raw-db.ts';
import { Model } from './reference.ts';
import { checkInvariants, type Run, runStep } from './run.ts';
import { stepArb } from './steps.ts';

const RUNS = Number(process.env.ONCEQ_MODEL_RUNS ?? 30);
const SEED =
  process.env.ONCEQ_MODEL_SEED === undefined ? undefined : Number(process.env.ONCEQ_MODEL_SEED);
const MAX_STEPS = 40;

function modelSuite(factory: BackendFactory): void {
  describe(`model: ${factory.name}`, () => {
    let opened: OpenedStore;
    let raw: Kysely<Database>;
    let clock: TestClock;
    beforeAll(async () => {
      clock = testClock(T0);
      opened = await factory.open(clock);
      raw = await openRawDb(opened.store);
    }, 60_000);
    afterAll(async () => {
      await raw?.destroy();
      await opened?.cleanup();
    }, 60_000);

    test(`${RUNS} random sequences of up to ${MAX_STEPS} steps agree with the reference model`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(stepArb, { minLength: 5, maxLength: MAX_STEPS, size: 'max' }),
          async (steps) => {
            const { store } = opened;
            await raw.deleteFrom('effects').execute();
            if (store.kind === 'postgres') await raw.deleteFrom('message_keys').execute();
            await raw.deleteFrom('messages').execute();
            clock.set(T0);
            const run: Run = {
              store,
              raw,
              clock,
              model: new Model(T0),
              leases: [],
              generations: new Map(),
            };
            for (const step of steps) {
              await runStep(run, step);
              await checkInvariants(run);
            }
          },
        ),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
    }, 300_000);
  });
}

forEachBackend('model', modelSuite);
