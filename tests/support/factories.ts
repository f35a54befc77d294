/**
 * Backend factories and fixtures for the conformance suite (tests/conformance/).
 *
 * A factory opens a **fresh, empty store per test** on the model clock it is given and
 * removes every trace of it afterwards. Everything backend-specific the suite needs
 * (where the store lives, how to check its integrity) comes through here, so the suite
 * itself never asks which backend it runs on.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Clock, type IdPolicy, openStore, type Store } from '@onceq/core';
import { type ModelClock, modelClock } from '@onceq/core/internal';
// kysely is a dependency of @onceq/core, not of the root package: take that copy.
import { sql } from 'kysely';
import { untilNoOpenTransactions } from './pg-database.ts';
import { giveBackSchema, takeSchema } from './pg-schemas.ts';
import { rawDb, rememberTarget } from './raw-db.ts';

/** One opened test store and how to get rid of it. */
export interface OpenedStore {
  store: Store;
  /** What a child process passes to `openStore`: a file path or a `postgres://` URL. */
  target: string;
  /** PostgreSQL: the schema of this test's tables. */
  schema?: string;
  /**
   * The backend's own consistency check, `'ok'` when sound (SQLite: `PRAGMA
   * integrity_check`). Absent where the backend has none worth running.
   */
  integrityCheck?: () => Promise<string>;
  /**
   * Writes `state` on a message without touching its lease, with the table's
   * `(state = 'leased') = (lease_until IS NOT NULL)` CHECK out of the way (SQLite:
   * `PRAGMA ignore_check_constraints`; PostgreSQL: the constraint dropped in this test's
   * own schema). Only for fence tests: a row no transition could write, to show that the
   * `state = 'leased'` predicate refuses it on its own.
   */
  forgeState(eventId: string, state: string): Promise<void>;
  /**
   * Resolves once a child process that died mid-transaction is gone from the store
   * (PostgreSQL: its server backend, which holds the dead transaction's row locks until
   * the server notices the closed socket). Call after a crash, before the next claim.
   */
  afterCrash(): Promise<void>;
  /** Closes the store and deletes everything it created. Throws if something is left behind. */
  cleanup(): Promise<void>;
}

export interface BackendFactory {
  name: 'sqlite' | 'postgres';
  /** A fresh store; `idPolicy` is `openStore`'s option (default: the store's own, lesson). */
  open(clock: Clock, idPolicy?: IdPolicy): Promise<OpenedStore>;
}

// ---------------------------------------------------------------------------
// SQLite: a fresh file in its own mkdtemp directory per test.

export const sqliteFactory: BackendFactory = {
  name: 'sqlite',
  async open(clock, idPolicy) {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-conformance-'));
    const target = join(dir, 'onceq.db');
    let store: Store;
    try {
      store = await openStore(target, { clock, ...(idPolicy ? { idPolicy } : {}) });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    return {
      store,
      target,
      async forgeState(eventId, state) {
        await rawDb(store, async (db) => {
          await sql`PRAGMA ignore_check_constraints = ON`.execute(db);
          await sql`UPDATE messages SET state = ${state} WHERE event_id = ${eventId}`.execute(db);
        });
      },
      // SQLite: the dead process's lock went with it (the kernel drops its file locks).
      afterCrash: async () => {},
      async integrityCheck() {
        // A second, read-only connection: it only reads, so it cannot contend with the
        // store's own connection for the write lock.
        const db = new BunDatabase(target, { readonly: true });
        try {
          const rows = db.query('PRAGMA integrity_check').all() as { integrity_check: string }[];
          return rows.map((r) => r.integrity_check).join('; ');
        } finally {
          db.close();
        }
      },
      async cleanup() {
        try {
          await store.close();
          // Closing the last connection checkpoints the WAL and deletes it: a leftover
          // -wal/-shm file means a connection or a statement was never finalized.
          const left = ['-wal', '-shm'].filter((suffix) => existsSync(`${target}${suffix}`));
          if (left.length > 0) {
            throw new Error(`SQLite left ${left.map((s) => `onceq.db${s}`).join(', ')} behind`);
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  },
};

// ---------------------------------------------------------------------------
// PostgreSQL: `DATABASE_URL`, a fresh schema `t_<random>` per test, emptied for the next
// test afterwards when it is still as the migrations built it, else dropped (pg-schemas.ts).
// Whether it runs at all is the rule of ./backends.ts (`forEachBackend`, `onPostgres`).

export const postgresFactory: BackendFactory = postgresFactoryThrough(
  'postgres',
  () => process.env.DATABASE_URL,
);

/**
 * A PostgreSQL factory whose stores connect through `storeUrl()` (a pooler in front of
 * DATABASE_URL's server, say), while the schema is dropped and open transactions are
 * watched on DATABASE_URL directly.
 */
export function postgresFactoryThrough(
  name: string,
  storeUrl: () => string | undefined,
): BackendFactory {
  return {
    name: 'postgres',
    async open(clock, idPolicy) {
      const url = process.env.DATABASE_URL;
      const through = storeUrl();
      if (!url || !through) throw new Error(`${name} factory: DATABASE_URL is not set`);
      const schema = await takeSchema(url);
      const giveBack = async () => {
        await giveBackSchema(url, schema);
      };
      let store: Store;
      try {
        store = await openStore(through, { schema, clock, ...(idPolicy ? { idPolicy } : {}) });
      } catch (error) {
        await giveBack().catch(() => {});
        throw error;
      }
      rememberTarget(store, { target: url, schema });
      return {
        store,
        target: through,
        schema,
        afterCrash: () => untilNoOpenTransactions(url),
        async forgeState(eventId, state) {
          await rawDb(store, async (db) => {
            await sql`ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_check`.execute(db);
            await sql`UPDATE messages SET state = ${state} WHERE event_id = ${eventId}`.execute(db);
          });
        },
        async cleanup() {
          try {
            await store.close();
          } finally {
            await giveBack();
          }
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------
// Clock

/**
 * The model clock of the tests, plus `script(...)`: the next reads return these values
 * in order, then the clock is back to its set value. That is how a test moves time
 * between two statements of one transaction (apply reads the clock twice).
 */
export interface TestClock extends ModelClock {
  script(...readings: number[]): void;
}

export const T0 = 1000;

export function testClock(start = T0): TestClock {
  const base = modelClock(start);
  const pending: number[] = [];
  const clock = (() => pending.shift() ?? base()) as TestClock;
  clock.set = (seconds) => {
    pending.length = 0;
    base.set(seconds);
  };
  clock.advance = (seconds) => {
    pending.length = 0;
    base.advance(seconds);
  };
  clock.script = (...readings) => {
    pending.push(...readings);
  };
  return clock;
}

// ---------------------------------------------------------------------------
// Fixtures

/**
 * One JSONL line. A string payload is spliced in verbatim, to keep lexemes such as
 * `10000.0` or odd whitespace that `JSON.stringify` would not produce.
 */
export function line(eventId: string, payload: Record<string, unknown> | string): string {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return `{"event_id":${JSON.stringify(eventId)},"payload":${body}}`;
}

export function batch(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

export function paid(category: string, amountCents: number): Record<string, unknown> {
  return { category, amount_cents: amountCents };
}

/** The demo input of docs/protocol.md §6: E0001 twice, then a pen, a book and a toy (unknown to v1). */
export const DEMO_LINES: readonly string[] = Object.freeze([
  line('E0001', paid('book', 10000)),
  line('E0001', paid('book', 10000)),
  line('E0002', paid('pen', 2000)),
  line('E0003', paid('book', 5000)),
  line('E0004', paid('toy', 3000)),
]);

export const DEMO_BATCH = batch(...DEMO_LINES);

export function eventId(n: number): string {
  return `E${String(n).padStart(4, '0')}`;
}

/**
 * `n` valid events E0001…, categories cycling book/pen/bag, amount `100 * i` cents.
 * Returns the JSONL batch, the ids and the expected money total.
 */
export function nEvents(n: number): { jsonl: string; ids: string[]; total: number } {
  const categories = ['book', 'pen', 'bag'];
  const ids: string[] = [];
  const lines: string[] = [];
  let total = 0;
  for (let i = 1; i <= n; i++) {
    const id = eventId(i);
    ids.push(id);
    lines.push(line(id, paid(categories[(i - 1) % 3] as string, 100 * i)));
    total += 100 * i;
  }
  return { jsonl: batch(...lines), ids, total };
}

/**
 * Opens a fresh store of `factory` on a model clock at {@link T0}, runs `body`, and
 * cleans the store up (a PostgreSQL schema is emptied for the next test, or dropped)
 * whatever `body` did.
 */
export async function withFreshStore(
  factory: BackendFactory,
  body: (opened: OpenedStore, clock: TestClock) => Promise<void>,
): Promise<void> {
  const clock = testClock(T0);
  const opened = await factory.open(clock);
  try {
    await body(opened, clock);
  } finally {
    await opened.cleanup();
  }
}
