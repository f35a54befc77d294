/**
 * A real `onceq work` / `enqueue` / `redrive` process (the real CLI, `bun
 * apps/cli/src/bin.ts`) dies at each named crash point of packages/core/src/testing/crash-points.ts
 * (`ONCEQ_FAULT=<point>`, exit 86, no cleanup). Then the store is checked as the crash
 * left it, and again after recovery by a later run on the model clock (`--now`): exactly
 * one effect per done event, attempts counted as the protocol says (every claim spends
 * budget), nothing partial (a handler's own rows included), a crashed enqueue wrote
 * nothing.
 *
 * Both backends: a SQLite file in a temporary directory, and a fresh PostgreSQL database
 * per test on `DATABASE_URL` (the CLI always uses the schema `onceq`, so each test gets
 * its own database). Whether the PostgreSQL half runs is the rule of
 * tests/support/backends.ts.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore, redrive, type Store, status, work } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { FAULT_EXIT_CODE, type FaultPoint } from '@onceq/core/testing';
import { handlers } from '@onceq/handler';
import { sql } from 'kysely';
import { forEachBackend } from '../support/backends.ts';
import { type CliResult, runOnceq } from '../support/cli.ts';
import { batch, line, nEvents, paid } from '../support/factories.ts';
import { scratchDatabase, untilNoOpenTransactions } from '../support/pg-database.ts';
import { rawDb } from '../support/raw-db.ts';

interface Place {
  /** The `--db` value. */
  db: string;
  dir: string;
  /** Resolves once the crashed process holds nothing in the store any more. */
  afterCrash(): Promise<void>;
  cleanup(): Promise<void>;
}

async function sqlitePlace(): Promise<Place> {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-crash-'));
  return {
    db: join(dir, 'onceq.db'),
    dir,
    afterCrash: async () => {},
    cleanup: async () => rmSync(dir, { recursive: true }),
  };
}

const pgDatabase = scratchDatabase('crash');

async function postgresPlace(): Promise<Place> {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-crash-'));
  return {
    db: pgDatabase.url,
    dir,
    afterCrash: () => untilNoOpenTransactions(pgDatabase.url),
    async cleanup() {
      rmSync(dir, { recursive: true });
      await pgDatabase.reset();
    },
  };
}

/**
 * Runs `fn` on the store in this process on the model clock at `now`, then closes it.
 * Only the crash itself needs a real CLI process; setting up and recovering in-process
 * keeps the file fast (the checks read the same database either way).
 */
async function atStore<T>(place: Place, now: number, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(place.db, { clock: modelClock(now) });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** What the store holds, by event id, plus its effects. */
async function inspect(place: Place) {
  const store = await openStore(place.db);
  try {
    const rows = await rawDb({ target: place.db }, (db) =>
      db
        .selectFrom('messages')
        .select(['event_id', 'state', 'attempts', 'generation'])
        .orderBy('event_id')
        .execute(),
    );
    const effects = await rawDb({ target: place.db }, (db) =>
      db.selectFrom('effects').select('event_id').orderBy('event_id').execute(),
    );
    const report = await status(store);
    return {
      messages: rows.map((r) => `${r.event_id} ${r.state} a${r.attempts} g${r.generation}`),
      effects: effects.map((e) => e.event_id),
      counts: report.messages,
      total: report.total,
    };
  } finally {
    await store.close();
  }
}

/** The handler modules that write rows of their own: by `write(tx)`, and by `insert`. */
const OWN_ROW_HANDLERS = [
  ['write', join(import.meta.dir, '..', 'support', 'handlers', 'ledger.ts')],
  ['insert', join(import.meta.dir, '..', 'support', 'handlers', 'ledger-rows.ts')],
] as const;

/** The user's rows and onceq's records of completions. */
async function ownRows(place: Place) {
  return rawDb({ target: place.db }, async (db) => {
    const { rows } = await sql<{ event_id: string; amount: number }>`
      SELECT event_id, amount FROM user_ledger ORDER BY event_id`.execute(db);
    const completions = await db
      .selectFrom('completions')
      .select('event_id')
      .orderBy('event_id')
      .execute();
    return {
      ledger: rows.map((r) => [r.event_id, Number(r.amount)]),
      completions: completions.map((c) => c.event_id),
    };
  });
}

function expectCode(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(
      `onceq exited ${result.code}, expected ${code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

const THREE = nEvents(3); // E0001 book 100, E0002 pen 200, E0003 bag 300: total 600

const PLACES = { sqlite: sqlitePlace, postgres: postgresPlace };

forEachBackend('a real onceq process dies at each crash point', ({ name: backend }) => {
  const makePlace = PLACES[backend];
  describe(`${backend}: a real onceq process dies at each crash point`, () => {
    let place: Place;
    if (backend === 'postgres') {
      beforeAll(() => pgDatabase.create());
      afterAll(() => pgDatabase.drop());
    }
    beforeEach(async () => {
      place = await makePlace();
    });
    afterEach(async () => {
      await place.cleanup();
    });

    const onceq = (args: string[], fault?: FaultPoint, stdin?: string) =>
      runOnceq(['--db', place.db, ...args], place.dir, {
        ...(fault === undefined ? {} : { env: { ONCEQ_FAULT: fault } }),
        ...(stdin === undefined ? {} : { stdin }),
      });

    /** Enqueues the three events at 1000 (no fault). */
    async function enqueueThree(): Promise<void> {
      await atStore(place, 1000, (store) => enqueue(store, THREE.jsonl));
    }

    /** After recovery at 1030 (the lease of the crashed run is over): all three done once. */
    async function recoverAndCheck(attempts: number): Promise<void> {
      await atStore(place, 1030, (store) => work(store, handlers.v1));
      const after = await inspect(place);
      expect(after.messages).toEqual([
        `E0001 done a${attempts} g${attempts}`,
        `E0002 done a${attempts} g${attempts}`,
        `E0003 done a${attempts} g${attempts}`,
      ]);
      expect(after.effects).toEqual(['E0001', 'E0002', 'E0003']);
      expect(after.total).toBe(THREE.total);
    }

    // Inside the apply transaction (or right after the claim): nothing of the apply
    // survives, the claim does. Recovery claims again: attempt 2, generation 2.
    // PostgreSQL writes a batch without write(tx) with its result template, one statement
    // committing by itself (driver/postgres/sql/complete.ts): there `after-effect-insert`
    // and `after-ack` come after that commit, and the store looks as at `after-commit`.
    const writtenAlone: FaultPoint[] = ['after-effect-insert', 'after-ack'];
    const beforeCommit: FaultPoint[] = [
      'after-claim',
      'after-handler',
      ...(backend === 'postgres' ? [] : writtenAlone),
    ];
    for (const point of beforeCommit) {
      test(`work dies at ${point}: the claims stay leased with no effect; after the lease, each event is done once (attempt 2)`, async () => {
        await enqueueThree();
        expectCode(await onceq(['work', '--now', '1000'], point), FAULT_EXIT_CODE);
        await place.afterCrash();
        const crashed = await inspect(place);
        expect(crashed.messages).toEqual([
          'E0001 leased a1 g1',
          'E0002 leased a1 g1',
          'E0003 leased a1 g1',
        ]);
        expect(crashed.effects).toEqual([]);
        if (point === 'after-claim') {
          // Before the lease runs out nothing is claimable: the dead worker still owns them.
          const early = await atStore(place, 1029, (store) => work(store, handlers.v1));
          expect(early).toMatchObject({ claimed: 0 });
        }
        await recoverAndCheck(2);
      });
    }

    // after-commit, and on PostgreSQL also after-effect-insert and after-ack: there the
    // batch's successes are one statement that has committed by then.
    const committed: FaultPoint[] = [
      'after-commit',
      ...(backend === 'postgres' ? writtenAlone : []),
    ];
    for (const point of committed) {
      const when =
        point === 'after-commit' ? '' : " (PostgreSQL: after the batch's one statement committed)";
      test(`work dies at ${point}${when}: the batch is done with its effects; a later run finds nothing and doubles nothing`, async () => {
        await enqueueThree();
        expectCode(await onceq(['work', '--now', '1000'], point), FAULT_EXIT_CODE);
        await place.afterCrash();
        const crashed = await inspect(place);
        expect(crashed.messages).toEqual([
          'E0001 done a1 g1',
          'E0002 done a1 g1',
          'E0003 done a1 g1',
        ]);
        expect(crashed.effects).toEqual(['E0001', 'E0002', 'E0003']);
        await recoverAndCheck(1);
      });
    }

    // One message per transaction: on PostgreSQL the claim of the next message runs while
    // the current one is handled and settled, the record of a message claims the one two
    // after it, and the record of E0002 does not wait for E0001's: so the crash may find
    // E0002 claimed (leased, attempt spent), or already done by its own record, or not
    // claimed yet, and E0003 claimed or not yet; at after-commit some record committed.
    // Either way, after the leases each event is done exactly once.
    for (const point of ['after-handler', 'after-commit'] as const) {
      test(`work --batch 1 dies at ${point} of the first message, the next claim maybe in flight: after the leases, each event is done once`, async () => {
        await enqueueThree();
        expectCode(await onceq(['work', '--batch', '1', '--now', '1000'], point), FAULT_EXIT_CODE);
        await place.afterCrash();
        const crashed = await inspect(place);
        if (point === 'after-commit') {
          // The first record to commit may be E0002's (E0001's started later, on a new
          // pooled connection); E0001's may have committed too, the server finishing a
          // statement the dead process had sent.
          expect(['E0001 done a1 g1', 'E0001 leased a1 g1']).toContain(crashed.messages[0] ?? '');
          expect(['E0002 done a1 g1', 'E0002 leased a1 g1', 'E0002 ready a0 g0']).toContain(
            crashed.messages[1] ?? '',
          );
          expect(
            crashed.messages.filter((row) => row.endsWith(' done a1 g1')).length,
          ).toBeGreaterThan(0);
        } else {
          expect(crashed.messages[0]).toBe('E0001 leased a1 g1');
          expect(['E0002 leased a1 g1', 'E0002 ready a0 g0']).toContain(crashed.messages[1] ?? '');
        }
        expect(['E0003 leased a1 g1', 'E0003 ready a0 g0']).toContain(crashed.messages[2] ?? '');
        expect(crashed.effects).toEqual(
          crashed.messages.flatMap((row) => (row.endsWith(' done a1 g1') ? [row.slice(0, 5)] : [])),
        );

        await atStore(place, 1030, (store) => work(store, handlers.v1, { batch: 1 }));
        const after = await inspect(place);
        // Done once each; a message the crashed run had leased spent one more attempt.
        expect(after.messages).toEqual(
          crashed.messages.map((row) => {
            const [id, state, a] = row.split(' ');
            const attempts = Number(a?.slice(1)) + (state === 'done' ? 0 : 1);
            return `${id} done a${attempts} g${attempts}`;
          }),
        );
        expect(after.effects).toEqual(['E0001', 'E0002', 'E0003']);
        expect(after.total).toBe(THREE.total);
      });
    }

    // SQLite never claims ahead: the record of a batch claims the next batch in its own
    // transaction, so the claim of E0002 commits with E0001's ACK, or rolls back with it.
    // Nothing is in flight, so the crash leaves exactly one picture.
    if (backend === 'sqlite') {
      const pictures: [FaultPoint, string[]][] = [
        ['after-ack', ['E0001 leased a1 g1', 'E0002 ready a0 g0', 'E0003 ready a0 g0']],
        ['after-commit', ['E0001 done a1 g1', 'E0002 leased a1 g1', 'E0003 ready a0 g0']],
      ];
      for (const [point, picture] of pictures) {
        test(`work --batch 1 dies at ${point} of the first record: the next claim ${point === 'after-ack' ? 'rolls back with the ACK' : 'committed with the ACK'}`, async () => {
          await enqueueThree();
          expectCode(
            await onceq(['work', '--batch', '1', '--now', '1000'], point),
            FAULT_EXIT_CODE,
          );
          const crashed = await inspect(place);
          expect(crashed.messages).toEqual(picture);
          expect(crashed.effects).toEqual(point === 'after-commit' ? ['E0001'] : []);
          // Before E0002's lease runs out nobody else may claim it.
          const early = await atStore(place, 1029, (store) => work(store, handlers.v1));
          expect(early).toMatchObject({ claimed: point === 'after-commit' ? 1 : 2 });
          await atStore(place, 1030, (store) => work(store, handlers.v1, { batch: 1 }));
          const after = await inspect(place);
          expect(after.effects).toEqual(['E0001', 'E0002', 'E0003']);
          expect(after.total).toBe(THREE.total);
        });
      }
    }

    /** The user's ledger table, and the three events at 1000. */
    async function ledgerAndThree(): Promise<void> {
      await atStore(place, 1000, async (store) => {
        await rawDb({ target: place.db }, (db) =>
          sql`CREATE TABLE user_ledger (event_id TEXT PRIMARY KEY, amount INTEGER NOT NULL)`.execute(
            db,
          ),
        );
        await enqueue(store, THREE.jsonl);
      });
    }

    const REFUNDS = [
      ['E0001', -100],
      ['E0002', -200],
      ['E0003', -300],
    ];

    for (const [how, module] of OWN_ROW_HANDLERS) {
      // PostgreSQL records a batch of completions with `insert` rows only with its result
      // template, one statement committing by itself (driver/postgres/sql/complete.ts):
      // there the point comes after that commit, as `after-effect-insert` does for money
      // effects.
      const oneStatement = backend === 'postgres' && how === 'insert';
      const title = oneStatement
        ? " (PostgreSQL: after the batch's one statement committed): done with one row each; a later run doubles nothing"
        : ': none of its rows, no record, the claims stay leased; after the lease each event is done once with one row each';
      test(`work with a handler's own completion (${how}) dies at after-completion-write${title}`, async () => {
        await ledgerAndThree();
        expectCode(
          await onceq(['work', '--handler', module, '--now', '1000'], 'after-completion-write'),
          FAULT_EXIT_CODE,
        );
        await place.afterCrash();
        const state = oneStatement ? 'done' : 'leased';
        expect((await inspect(place)).messages).toEqual([
          `E0001 ${state} a1 g1`,
          `E0002 ${state} a1 g1`,
          `E0003 ${state} a1 g1`,
        ]);
        const committed = { ledger: REFUNDS, completions: ['E0001', 'E0002', 'E0003'] };
        expect(await ownRows(place)).toEqual(
          oneStatement ? committed : { ledger: [], completions: [] },
        );
        const { handle } = await import(module);
        const later = await atStore(place, 1030, (store) => work(store, handle));
        expect(later).toMatchObject({ claimed: oneStatement ? 0 : 3 });
        const after = await inspect(place);
        const attempts = oneStatement ? 1 : 2;
        expect(after.messages).toEqual(
          ['E0001', 'E0002', 'E0003'].map((id) => `${id} done a${attempts} g${attempts}`),
        );
        expect(after.effects).toEqual([]);
        expect(await ownRows(place)).toEqual(committed);
      });

      // `complete` (apply) writes in one explicit transaction on every backend: the point
      // is between the user's rows and COMMIT there, `insert` rows on PostgreSQL included.
      test(`complete with a handler's own completion (${how}) dies at after-completion-write: none of its rows, no record, the claim stays leased; completed again it has its one row`, async () => {
        await ledgerAndThree();
        expectCode(await onceq(['claim', '--now', '1000']), 0);
        const args = ['complete', 'E0001', '--generation', '1', '--handler', module];
        expectCode(
          await onceq([...args, '--now', '1001'], 'after-completion-write'),
          FAULT_EXIT_CODE,
        );
        await place.afterCrash();
        expect((await inspect(place)).messages[0]).toBe('E0001 leased a1 g1');
        expect(await ownRows(place)).toEqual({ ledger: [], completions: [] });
        expectCode(await onceq([...args, '--now', '1002']), 0);
        expect((await inspect(place)).messages[0]).toBe('E0001 done a1 g1');
        expect(await ownRows(place)).toEqual({ ledger: [['E0001', -100]], completions: ['E0001'] });
      });
    }

    test('enqueue dies mid-transaction: nothing of the batch was written; the same batch enqueued again is accepted whole', async () => {
      expectCode(
        await onceq(['enqueue', '-', '--now', '1000'], 'mid-enqueue', THREE.jsonl),
        FAULT_EXIT_CODE,
      );
      await place.afterCrash();
      const crashed = await inspect(place);
      expect(crashed.messages).toEqual([]);
      expect(crashed.effects).toEqual([]);
      const again = await atStore(place, 1000, (store) => enqueue(store, THREE.jsonl));
      expect(again).toEqual({ accepted: 3, duplicates: 0 });
      await recoverAndCheck(1);
    });

    test('redrive dies mid-transaction: the message is still dead with its attempts; redriven again it completes once', async () => {
      await atStore(place, 1000, async (store) => {
        await enqueue(
          store,
          batch(line('E0001', paid('book', 100)), line('E0002', paid('toy', 300))),
        );
        await work(store, handlers.v1); // E0002 dead: v1 knows no toy
      });
      expectCode(
        await onceq(['redrive', 'E0002', '--now', '1001'], 'mid-redrive'),
        FAULT_EXIT_CODE,
      );
      await place.afterCrash();
      const crashed = await inspect(place);
      expect(crashed.messages).toEqual(['E0001 done a1 g1', 'E0002 dead a1 g1']);
      await atStore(place, 1001, async (store) => {
        expect(await redrive(store, ['E0002'])).toEqual(['E0002']);
        await work(store, handlers.v2);
      });
      const after = await inspect(place);
      expect(after.messages).toEqual(['E0001 done a1 g1', 'E0002 done a1 g2']);
      expect(after.effects).toEqual(['E0001', 'E0002']);
      expect(after.total).toBe(400);
    });

    test('an unknown ONCEQ_FAULT is refused at start (exit 2), so a typo cannot disarm a crash test', async () => {
      const result = await onceq(['status'], 'after-lunch' as FaultPoint);
      expect(result.code).toBe(2);
      expect(result.stderr).toStartWith('onceq: ONCEQ_FAULT="after-lunch" names no crash point');
    });
  });
});
