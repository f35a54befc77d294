/**
 * SQLite's implementation of {@link Statements}. A statement here costs no round trip
 * (the database is in the process), so the protocol keeps its plain statements: the
 * claim is the recovery UPDATE then the claim UPDATE, the ACK is the effect INSERT then
 * the fenced UPDATE, each in the caller's `BEGIN IMMEDIATE` transaction, which already
 * holds the one write lock (no row locks needed, no `SKIP LOCKED` to have).
 */
import { sql } from 'kysely';
import { crashPoint } from '../../faults.ts';
import {
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../machine.ts';
import { defineStatement, type Executor } from '../prepared.ts';
import * as shared from '../shared-statements.ts';
import { stateLiteral } from '../shared-statements.ts';
import type { ClaimedRow, ClaimInput, FencedRow, Statements, Success } from '../statements.ts';

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left, else to `dead` with `lease_expired`.
 *
 * `INDEXED BY` pins the partial `messages_lease` index: without statistics SQLite's
 * planner would rather walk every leased row of `messages_claim`, and with it a missing
 * index is an error at prepare time instead of a silent scan.
 */
const recover = defineStatement('recover', ({ p }) => {
  const now = p.value<number>('now');
  const retry = sql`attempts < ${p.value<number>('maxAttempts')}`;
  return sql`
    UPDATE messages INDEXED BY messages_lease SET
      state = CASE WHEN ${retry} THEN ${stateLiteral('ready')} ELSE ${stateLiteral('dead')} END,
      available_at = CASE WHEN ${retry} THEN lease_until ELSE available_at END,
      lease_until = NULL,
      last_error_code = ${sql.lit(LEASE_EXPIRED)},
      last_error_detail = CASE WHEN ${retry} THEN ${RECOVERED_DETAIL} ELSE ${RECOVERED_DEAD_DETAIL} END,
      updated_at = ${now}
    WHERE state = ${stateLiteral('leased')} AND lease_until <= ${now}`;
});

/**
 * ready → leased for up to `n` claimable rows, oldest `(available_at, event_id)` first,
 * as one `UPDATE … RETURNING`; the UPDATE goes by primary key from the picking subquery.
 */
const claimRows = defineStatement<ClaimedRow>('claim', ({ db, p, n }) => {
  const pick = db
    .selectFrom('messages')
    .select('event_id')
    .where('state', '=', stateLiteral('ready'))
    .where('available_at', '<=', p.value<number>('now'))
    .orderBy('available_at')
    .orderBy('event_id')
    .limit(n);
  return db
    .updateTable('messages')
    .set((eb) => ({
      state: stateLiteral('leased'),
      attempts: eb('attempts', '+', 1),
      generation: eb('generation', '+', 1),
      lease_until: p.value<number>('leaseUntil'),
      updated_at: p.value<number>('now'),
    }))
    .where('event_id', 'in', pick)
    .returning(['event_id', 'generation', 'attempts', 'lease_until', 'payload', 'available_at']);
});

/** Reads `n` messages for apply/fail (no lock needed: the transaction holds the write lock). */
const readFenced = defineStatement<FencedRow>('read-fenced', ({ db, p, n }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'state', 'generation', 'attempts', 'lease_until'])
    .where('event_id', 'in', p.list<string>('ids', n)),
);

/** The effect rows of `n` messages, one INSERT. */
const insertEffects = defineStatement('insert-effects', ({ db, p, n }) => {
  const ids = p.list<string>('ids', n);
  const categories = p.list<string>('categories', n);
  const amounts = p.list<number>('amounts', n);
  return db.insertInto('effects').values(
    ids.map((id, i) => ({
      event_id: id,
      category: categories[i] as string,
      amount_cents: amounts[i] as number,
      created_at: p.value<number>('now'),
    })),
  );
});

function insertEffectRows(x: Executor, succeeded: readonly Success[], createdAt: number) {
  return x.changes(
    insertEffects,
    {
      ids: succeeded.map((s) => s.lease.eventId),
      categories: succeeded.map((s) => s.effect.category),
      amounts: succeeded.map((s) => s.effect.amountCents),
      now: createdAt,
    },
    succeeded.length,
  );
}

async function claim(x: Executor, input: ClaimInput): Promise<ClaimedRow[]> {
  const values = {
    now: input.now,
    leaseUntil: input.now + input.leaseSeconds,
    maxAttempts: input.maxAttempts,
  };
  await x.changes(recover, values);
  return inClaimOrder(await x.rows(claimRows, values, input.limit));
}

/** SQLite's statements: plain statements in the caller's `BEGIN IMMEDIATE` transaction. */
export const sqliteStatements: Statements = {
  claim,
  claimAlone: (store, input) => store.transact((x) => claim(x, { ...input, now: store.clock() })),
  readFenced: (x, leases) =>
    x.rows(readFenced, { ids: leases.map((l) => l.eventId) }, leases.length),
  ack: shared.ack,
  async ackWithEffects(x, succeeded, createdAt, secondCheck) {
    await insertEffectRows(x, succeeded, createdAt);
    crashPoint('after-effect-insert');
    // The second clock check comes after the INSERT: it may have been slow too.
    const later = secondCheck();
    return shared.ack(
      x,
      succeeded.map((s) => s.lease),
      later,
    );
  },
  settleAlone: (store, lease, write, now) =>
    store.transact(async (x) => {
      if ('move' in write) {
        const changed = await shared.fail(x, lease, write.move, now);
        crashPoint('after-ack');
        return changed;
      }
      // The fenced ACK first: a lost lease then writes nothing at all (no effect INSERT
      // to roll back, no duplicate key against an effect another claim committed).
      const changed = await shared.ack(x, [lease], now);
      if (changed === 0) return 0;
      await insertEffectRows(x, [{ lease, effect: write.effect }], write.createdAt);
      crashPoint('after-effect-insert');
      crashPoint('after-ack');
      return changed;
    }),
  fail: shared.fail,
  extend: shared.extend,
  release: shared.release,
  readForRedrive: (x, ids) => x.rows(shared.redriveCheck, { ids }, ids.length),
  redrive: shared.redrive,
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages: shared.insertMessages,
  // Workers poll a SQLite file: nobody to notify.
  wake: async () => {},
  snapshot: shared.snapshotStatement(sql`INDEXED BY messages_dead`),
};
