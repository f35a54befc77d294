/**
 * The kill storm, with real processes: three `onceq work` processes on one store,
 * SIGKILLed at random moments (preferably while leases are live), over three phases of
 * the model clock so killed leases expire, are recovered, and a message killed on all
 * three attempts goes dead. After a calm drain and a redrive of the DLQ every event is
 * `done` with exactly one effect and the totals are exact. On a SQLite file and on
 * PostgreSQL (a fresh database on the suite's cluster).
 */
import { Database } from 'bun:sqlite';
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPostgres } from '../support/backends.ts';
import {
  type KillStormReport,
  killStorm,
  postgresLiveLeases,
  sqliteLiveLeases,
} from '../support/kill-storm.ts';
import { expectedFacts, freshDatabase, type StoreFacts, storeFacts } from '../support/pg-storm.ts';
import { rng } from '../support/storm.ts';

const EVENTS = 60;
const SEED = Number(process.env.ONCEQ_STORM_SEED ?? Date.now() % 1_000_000);
/** Runs that must end by SIGKILL: the storm goes on (bounded) until they have. */
const KILLS = 2;
/** Generous: on a loaded two-core machine one CLI run can take seconds. */
const STORM_TIMEOUT_MS = 240_000;

function summary(name: string, report: KillStormReport): string {
  return `${name} kill storm: ${report.runs.length} runs (work and claim), ${report.killed} killed by SIGKILL (${report.killsAtLiveLeases} of ${report.kills} kills at live leases), seed ${SEED}`;
}

/** The SQLite file's facts, read with a read-only connection (never through onceq). */
function sqliteFacts(path: string, events: number): StoreFacts {
  const db = new Database(path, { readonly: true });
  try {
    const states: Record<string, number> = {};
    for (const r of db.query('SELECT state, count(*) AS n FROM messages GROUP BY state').all() as {
      state: string;
      n: number;
    }[]) {
      states[r.state] = r.n;
    }
    const e = db
      .query(
        'SELECT count(*) AS n, count(DISTINCT event_id) AS d, coalesce(sum(amount_cents), 0) AS t FROM effects',
      )
      .get() as { n: number; d: number; t: number };
    const totals: Record<string, number> = {};
    for (const r of db
      .query('SELECT category, sum(amount_cents) AS t FROM effects GROUP BY category')
      .all() as { category: string; t: number }[]) {
      totals[r.category] = r.t;
    }
    let missing = 0;
    const has = db.query('SELECT 1 FROM effects WHERE event_id = ?');
    for (let n = 1; n <= events; n++) {
      if (has.get(`E${String(n).padStart(4, '0')}`) === null) missing++;
    }
    has.finalize();
    return { states, effects: e.n, doubled: e.n - e.d, total: e.t, totals, missing };
  } finally {
    db.close();
  }
}

describe('storm: SIGKILLed workers', () => {
  test(
    'SQLite: three work processes killed at random and at live leases; exact totals, each effect once',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'onceq-kill-sqlite-'));
      const path = join(dir, 'onceq.db');
      try {
        const report = await killStorm({
          db: path,
          events: EVENTS,
          workers: 3,
          runsPerWorker: 4,
          kills: KILLS,
          liveLeases: sqliteLiveLeases(path),
          random: rng(SEED),
        });
        console.log(summary('SQLite', report));
        expect(report.killed).toBeGreaterThanOrEqual(KILLS);
        expect(report.breaches).toEqual([]);
        expect(sqliteFacts(path, EVENTS)).toEqual(expectedFacts(EVENTS));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    STORM_TIMEOUT_MS,
  );

  onPostgres('kill storm', (url) =>
    test(
      'PostgreSQL: three work processes killed at random and at live leases; exact totals, each effect once',
      async () => {
        const database = await freshDatabase(url);
        try {
          const report = await killStorm({
            db: database.url,
            events: EVENTS,
            workers: 3,
            runsPerWorker: 4,
            kills: KILLS,
            liveLeases: postgresLiveLeases(database.url),
            random: rng(SEED + 7),
          });
          console.log(summary('PostgreSQL', report));
          expect(report.killed).toBeGreaterThanOrEqual(KILLS);
          expect(report.breaches).toEqual([]);
          expect(await storeFacts(database.url, EVENTS)).toEqual(expectedFacts(EVENTS));
        } finally {
          await database.drop();
        }
      },
      STORM_TIMEOUT_MS,
    ),
  );
});
