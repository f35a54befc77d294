/**
 * The ordered kill storm (tests/support/ordered-storm.ts), with real `onceq worker`
 * processes SIGKILLed while batches of keyed events arrive: 2 workers on a SQLite file,
 * 8 on PostgreSQL, and 4 through PgBouncer in transaction mode. Afterwards every key's
 * rows, written by the handler with each ACK, are its events 1, 2, 3, … in commit order
 * up to its dead head (or all of them): applied once each, in order, with no gap; a key
 * without a dead head finished; at most one message of a key was ever seen leased.
 *
 * `ONCEQ_STORM_SCALE=N` multiplies the keys and the kills (a longer storm, by hand).
 */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPostgres } from '../support/backends.ts';
import {
  expectedOrder,
  type OrderedStormPlan,
  type OrderedStormReport,
  orderedStorm,
  orderFacts,
  storeReader,
} from '../support/ordered-storm.ts';
import { freshDatabase } from '../support/pg-storm.ts';
import { poolerSuiteSkipped, startPooler } from '../support/pgbouncer.ts';
import { rng } from '../support/storm.ts';

const SEED = Number(process.env.ONCEQ_STORM_SEED ?? Date.now() % 1_000_000);
const SCALE = Math.max(1, Number(process.env.ONCEQ_STORM_SCALE ?? 1));
/** Generous: on a loaded two-core machine a worker takes seconds to start. */
const STORM_TIMEOUT_MS = 300_000 * SCALE;

function summary(name: string, report: OrderedStormReport): string {
  const dead = report.keys.filter((k) => k.poison !== null).length;
  return `${name} ordered storm: ${report.keys.length} keys (${dead} with a dead head), ${report.kills} workers SIGKILLed (${report.killsAtLiveLeases} at live leases), ${report.redriven} messages dead of the kills redriven, seed ${SEED}`;
}

async function stormAndCheck(name: string, plan: OrderedStormPlan): Promise<void> {
  const report = await orderedStorm(plan);
  console.log(summary(name, report));
  expect(report.kills).toBe(plan.kills);
  expect(report.badExits).toEqual([]);
  expect(report.traceLines).toBe(0);
  expect(report.maxLeasedPerKey).toBeLessThanOrEqual(1);
  const reader = storeReader(plan.backend, plan.direct);
  try {
    expect(await orderFacts(reader)).toEqual(expectedOrder(report.keys));
  } finally {
    await reader.close();
  }
}

describe('storm: ordered keys under SIGKILL', () => {
  test(
    'SQLite: two workers killed and replaced while keyed batches arrive; each key applied once, in order, up to its dead head',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'onceq-ordered-sqlite-'));
      const path = join(dir, 'onceq.db');
      try {
        await stormAndCheck('SQLite', {
          backend: 'sqlite',
          db: path,
          direct: path,
          keys: 16 * SCALE,
          perKey: 10,
          workers: 2,
          kills: 4 * SCALE,
          random: rng(SEED),
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    STORM_TIMEOUT_MS,
  );

  onPostgres('ordered kill storm', (url) =>
    test(
      'PostgreSQL: eight workers killed and replaced while keyed batches arrive; each key applied once, in order, up to its dead head',
      async () => {
        const database = await freshDatabase(url);
        try {
          await stormAndCheck('PostgreSQL', {
            backend: 'postgres',
            db: database.url,
            direct: database.url,
            keys: 24 * SCALE,
            perKey: 10,
            workers: 8,
            kills: 5 * SCALE,
            random: rng(SEED + 3),
          });
        } finally {
          await database.drop();
        }
      },
      STORM_TIMEOUT_MS,
    ),
  );
});

const POOLER_SKIP = poolerSuiteSkipped('storm-ordered.test.ts');

describe.skipIf(POOLER_SKIP)('storm: ordered keys through PgBouncer in transaction mode', () => {
  test(
    'four workers through the pooler, one killed and replaced: each key applied once, in order, one message of a key leased at a time',
    async () => {
      const direct = process.env.DATABASE_URL;
      if (!direct)
        throw new Error('DATABASE_URL is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)');
      const database = await freshDatabase(direct);
      const pooler = await startPooler(direct, 'transaction');
      try {
        await stormAndCheck('PgBouncer', {
          backend: 'postgres',
          db: pooler.urlFor(database.name),
          direct: database.url,
          keys: 24 * SCALE,
          perKey: 8,
          workers: 4,
          kills: 2 * SCALE,
          random: rng(SEED + 5),
        });
      } finally {
        await pooler.stop();
        await database.drop();
      }
    },
    STORM_TIMEOUT_MS,
  );
});
