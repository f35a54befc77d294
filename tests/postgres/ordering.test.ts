/**
 * PostgreSQL: an enqueue deciding that a message waits behind its key's head, and the
 * ACK of that head on another connection, never interleave (docs/ordering.md): the ACK's
 * release of the key's next message waits for the enqueue's transaction, then sees its
 * message. Without the per-key lock the ACK would commit first, find nothing waiting,
 * and leave the enqueued message waiting forever behind a head already done.
 */
import { expect, test } from 'bun:test';
import { apply, enqueue, show } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import pg from 'pg';
import { describePostgres } from '../support/backends.ts';
import { postgresFactory, testClock } from '../support/factories.ts';

const book = (n: number) => ({ category: 'book', amount_cents: n });

describePostgres('postgres: ordering keys across connections', () => {
  test('an ACK racing an open enqueue of its key waits for it, then releases the enqueued message', async () => {
    const opened = await postgresFactory.open(testClock());
    const pool = new pg.Pool({ connectionString: opened.target, max: 2 });
    try {
      const { store } = opened;
      await enqueue(store, [{ eventId: 'E0001', payload: book(1), key: 'A' }]);
      const [head] = await claimMany(store, { limit: 1 });
      if (head === undefined) throw new Error('the head was not claimable');
      const caller = await pool.connect();
      try {
        await caller.query('BEGIN');
        await enqueue(store, [{ eventId: 'E0002', payload: book(2), key: 'A' }], {
          transaction: caller,
        });
        // The ACK on the store's own connection, while the enqueue is not committed.
        const acked = apply(store, head, handlers.v1);
        // Bounded wait for the event: the ACK waiting on the key's lock, or finishing.
        let finished = false;
        void acked.then(() => {
          finished = true;
        });
        for (let i = 0; i < 500 && !finished; i++) {
          const { rows } = await pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          if (Number(rows[0]?.n) > 0) break;
          await Bun.sleep(10);
        }
        expect(finished).toBe(false);
        await caller.query('COMMIT');
        expect((await acked).outcome).toBe('done');
      } finally {
        caller.release();
      }
      expect((await show(store, 'E0002')).state).toBe('ready');
    } finally {
      await pool.end();
      await opened.cleanup();
    }
  }, 60_000);
});
