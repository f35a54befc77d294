/**
 * The row locks of PostgreSQL's fence reads, shown with two connections: what apply
 * and redrive check, they lock, so a second client cannot change it between the check
 * and the write. (SQLite needs none of this: `BEGIN IMMEDIATE` takes the one write lock
 * before the first read.)
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts.
 */
import { expect, test } from 'bun:test';
import { enqueue, NotDeadError, openStore, redrive, show, work } from '@onceq/core';
import { claimMany, effectResult, modelClock, postgresTemplate } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';
import { batch, line, paid, postgresFactory, T0, testClock } from '../support/factories.ts';

/** Polls until some backend of this database waits for a lock; bounded at 30 s. */
async function untilSomeoneWaitsForALock(url: string): Promise<void> {
  const probe = new SQL(url);
  try {
    for (let i = 0; i < 600; i++) {
      const [row] = await probe`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      if ((row as { n: number }).n > 0) return;
      await Bun.sleep(50);
    }
    throw new Error('no backend started waiting for a lock within 30 s');
  } finally {
    await probe.close();
  }
}

describePostgres('postgres: fence reads lock what they check', () => {
  test("the fence read (apply's, fail's, the lease service's) is FOR UPDATE: a claim at the lease's expiry skips the row until that transaction commits", async () => {
    const opened = await postgresFactory.open(testClock(T0));
    const { store, target, schema } = opened;
    const other = await openStore(target, { schema: schema as string, clock: modelClock(1030) });
    try {
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const [lease] = await claimMany(store, { limit: 1 }); // until 1030
      if (lease === undefined) throw new Error('nothing claimed');
      const stolen = await store.transact(async (x) => {
        const [row] = await store.driver.readFenced(x, [lease]);
        expect(row?.state).toBe('leased');
        // Another worker whose clock already says 1030 (the lease ran out for it) tries
        // to recover and re-claim the row now, between our fence read and our ACK.
        const taken = await claimMany(other, { limit: 1 });
        const effect = effectResult({ category: 'book', amountCents: 100 });
        const { written } = await postgresTemplate(x, [{ lease, ...effect }], 1029, undefined);
        expect([...written]).toEqual([['E0001', null]]);
        return taken;
      });
      expect(stolen).toEqual([]);
      expect(await show(store, 'E0001')).toMatchObject({ state: 'done', generation: 1 });
    } finally {
      await other.close();
      await opened.cleanup();
    }
  });

  test('two concurrent redrives of one message: the second waits, then refuses with NotDeadError (exit 4) and changes nothing', async () => {
    const opened = await postgresFactory.open(testClock(T0));
    const { store, target, schema } = opened;
    const other = await openStore(target, { schema: schema as string, clock: modelClock(1001) });
    const first = new SQL(target);
    try {
      await enqueue(store, batch(line('E0001', paid('toy', 300))));
      await work(store, handlers.v1); // dead: v1 knows no toy
      // The first redrive, by hand so it can stay open: lock, move to ready, hold.
      let second: Promise<unknown> | undefined;
      await first.begin(async (tx) => {
        await tx.unsafe(
          `SELECT state FROM "${schema}".messages WHERE event_id = 'E0001' FOR UPDATE`,
        );
        await tx.unsafe(
          `UPDATE "${schema}".messages SET state = 'ready', attempts = 0 WHERE event_id = 'E0001'`,
        );
        second = redrive(other, ['E0001']).then(
          (moved) => ({ moved }),
          (error: unknown) => ({ error }),
        );
        await untilSomeoneWaitsForALock(target);
      });
      const outcome = (await second) as { moved?: string[]; error?: unknown };
      expect(outcome.error).toBeInstanceOf(NotDeadError);
      expect((outcome.error as NotDeadError).exitCode).toBe(4);
      expect((outcome.error as NotDeadError).message).toContain('E0001 is ready');
      expect(await show(store, 'E0001')).toMatchObject({ state: 'ready', attempts: 0 });
    } finally {
      await first.close();
      await other.close();
      await opened.cleanup();
    }
  });
});
