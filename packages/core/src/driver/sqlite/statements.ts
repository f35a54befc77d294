/**
 * SQLite's {@link Driver}. A statement here costs no round trip
 * (the database is in the process), so the protocol keeps its plain statements: the
 * claim is the recovery UPDATE then the claim UPDATE, the completion is the fenced ACK
 * UPDATE then (if it matched) the effect INSERT, each in the caller's `BEGIN IMMEDIATE` transaction, which already
 * holds the one write lock (no row locks needed, no `SKIP LOCKED` to have).
 *
 * The hot statements (recovery, claim, fence read, effect insert, ACK, failure) run
 * synchronously on the connection's cached prepared statements ({@link SqliteExecutor}):
 * no promise per statement.
 * The fence read, the effect INSERT and the ACK go **one row per execution** of one
 * prepared statement, like the bare baseline of `bun run bench`: a 100-row
 * `UPDATE … WHERE event_id IN (…) AND (… OR …)` cost SQLite 12-15 µs of CPU a message
 * against 6-8 µs for 100 single-row UPDATEs, and a multi-row effect INSERT spills the
 * statement journal to disk (see {@link completeIn}). The ACK, the failure and the
 * completion record are the words PostgreSQL runs too (shared-statements.ts).
 */
import {
  type FailureMove,
  inClaimOrder,
  LEASE_EXPIRED,
  RECOVERED_DEAD_DETAIL,
  RECOVERED_DETAIL,
} from '../../machine.ts';
import { crashPoint } from '../../testing/crash-points.ts';
import type { LeaseRef } from '../../types.ts';
import { insertValues, type UserWrite, writeCompletions } from '../completion-write.ts';
import type {
  ClaimedRow,
  ClaimInput,
  CompletionWrite,
  Driver,
  FencedRow,
  SnapshotRow,
} from '../driver.ts';
import type { Executor } from '../executor.ts';
import * as shared from '../shared-statements.ts';
import * as ordering from '../sql/ordering.ts';
import { sharedDriver } from '../sql/shared-driver.ts';
import { sqliteDialect, sqlText } from '../sql-text.ts';
import { type SqliteExecutor, sqliteExecutor } from './executor.ts';
import { insertMessages } from './sql/insert-messages.ts';
import { foreignKeyProbe, integrityProbe } from './sql/integrity.ts';
import { schemas } from './sql/schema.ts';
import { copyTo, vacuum } from './sql/vacuum.ts';

/**
 * Lazy recovery: leased rows whose lease ran out go back to `ready` (available at their
 * `lease_until`) while the cycle has attempts left, else to `dead` with `lease_expired`.
 * ?1 max attempts, ?2 now, ?3-?5 the error code and details.
 *
 * `INDEXED BY` pins the partial `messages_lease` index: without statistics SQLite's
 * planner would rather walk every leased row of `messages_claim`, and with it a missing
 * index is an error at prepare time instead of a silent scan.
 */
const RECOVER = sqlText(
  'recover',
  1,
  `UPDATE messages INDEXED BY messages_lease SET
  state = CASE WHEN attempts < ?1 THEN 'ready' ELSE 'dead' END,
  available_at = CASE WHEN attempts < ?1 THEN lease_until ELSE available_at END,
  lease_until = NULL,
  last_error_code = ?3,
  last_error_detail = CASE WHEN attempts < ?1 THEN ?4 ELSE ?5 END,
  updated_at = ?2
WHERE state = 'leased' AND lease_until <= ?2`,
);

/**
 * ready → leased for up to ?3 claimable rows, oldest `(available_at, event_id)` first,
 * as one `UPDATE … RETURNING`; the UPDATE goes by primary key from the picking subquery
 * (the head of `messages_claim`). ?1 the new `lease_until`, ?2 now.
 */
const CLAIM = sqlText(
  'claim',
  1,
  `UPDATE messages SET
  state = 'leased', attempts = attempts + 1, generation = generation + 1,
  lease_until = ?1, updated_at = ?2
WHERE event_id IN (
  SELECT event_id FROM messages WHERE state = 'ready' AND available_at <= ?2
  ORDER BY available_at, event_id LIMIT ?3)
RETURNING event_id, generation, attempts, lease_until, payload, available_at`,
);

/** One message for apply's and fail's fence read (no lock needed: the transaction holds the write lock). */
const READ_FENCED = sqlText(
  'read-fenced',
  1,
  `SELECT event_id, payload, state, generation, attempts, lease_until
FROM messages WHERE event_id = ?1`,
);

/** One effect row: ?1 `event_id`, ?2 category, ?3 amount, ?4 `created_at`. */
const INSERT_EFFECT = sqlText(
  'insert-effect',
  1,
  `INSERT INTO effects (event_id, category, amount_cents, created_at)
VALUES (?1, ?2, ?3, ?4)`,
);

/** The statements SQLite shares with PostgreSQL, in SQLite's words. */
const ACK = shared.ackText(sqliteDialect);
const FAIL = shared.failText(sqliteDialect);
const INSERT_COMPLETION = shared.insertCompletionText(sqliteDialect);

/** The fenced ACK of one lease; returns the rows marked done (0 or 1). */
function ackRow(x: SqliteExecutor, lease: LeaseRef, now: number): number {
  return x.run(ACK, shared.ackParams(sqliteDialect, lease, now) as never[]);
}

/**
 * Every write of `writes` in the caller's `BEGIN IMMEDIATE` transaction, one row per
 * statement: for an effect the fenced ACK, then (only if it matched) its effect row. Not
 * one multi-row INSERT for the effects: a statement that may abort halfway (constraints,
 * the counters trigger) keeps a statement journal of every page it changes, and past 64
 * KiB SQLite spills that journal to a temporary file, which then takes a `pwrite` for
 * every page every later statement of the transaction changes (strace: 68,478 writes to
 * it for 10,000 messages). A 100-row effect INSERT crossed that line; a single row never
 * does. User completions go last (completion-write.ts).
 */
async function completeIn(
  x: SqliteExecutor,
  writes: readonly CompletionWrite[],
  now: number,
): Promise<Map<string, FailureMove | null>> {
  const written = new Map<string, FailureMove | null>();
  let effects = false;
  let users = false;
  for (const write of writes) {
    const { lease } = write;
    if ('effect' in write) {
      // The fenced ACK first: a lost lease then writes nothing at all (no effect INSERT
      // to roll back, no duplicate key against an effect another claim committed).
      if (ackRow(x, lease, now) === 0) continue;
      const { category, amountCents } = write.effect;
      x.run(INSERT_EFFECT, [lease.eventId, category, amountCents, now]);
      effects = true;
      written.set(lease.eventId, null);
    } else if ('failure' in write) {
      const move = write.failure(now);
      if (failRow(x, lease, move, now) === 1) written.set(lease.eventId, move);
    } else users = true;
  }
  if (effects) crashPoint('after-effect-insert');
  if (users) {
    const all = writes.filter((w): w is UserWrite => 'completion' in w);
    await completeUsers(x, all, now, written);
  }
  crashPoint('after-ack');
  return written;
}

/** The user completions of {@link completeIn}, after every effect and failure. */
async function completeUsers(
  x: SqliteExecutor,
  users: readonly UserWrite[],
  now: number,
  written: Map<string, FailureMove | null>,
): Promise<void> {
  const record = (write: UserWrite) =>
    x.run(INSERT_COMPLETION, [write.lease.eventId, write.completion.summary ?? null, now]);
  const done = await writeCompletions(x, users, now, {
    ackAll: async (all) => {
      const acked = new Set<string>();
      for (const write of all) {
        if (ackRow(x, write.lease, now) === 0) continue;
        record(write);
        acked.add(write.lease.eventId);
      }
      return acked;
    },
    ack: async (write) => ackRow(x, write.lease, now),
    record: async (write) => {
      record(write);
    },
    fail: async (write, move) => failRow(x, write.lease, move, now),
    insert: (groups) => insertValues(x, groups, (position) => `?${position}`, MAX_PARAMETERS),
  });
  for (const [id, result] of done) written.set(id, result);
}

function failRow(x: SqliteExecutor, lease: LeaseRef, move: FailureMove, now: number): number {
  return x.run(FAIL, shared.failParams(sqliteDialect, lease, move, now) as never[]);
}

function readFencedRows(x: SqliteExecutor, leases: readonly LeaseRef[]): FencedRow[] {
  const rows: FencedRow[] = [];
  for (const lease of leases) {
    const row = x.get<FencedRow>(READ_FENCED, [lease.eventId]);
    if (row !== null) rows.push(row);
  }
  return rows;
}

function claimRows(x: SqliteExecutor, input: ClaimInput): ClaimedRow[] {
  const { now } = input;
  x.run(RECOVER, [input.maxAttempts, now, LEASE_EXPIRED, RECOVERED_DETAIL, RECOVERED_DEAD_DETAIL]);
  return inClaimOrder(x.all<ClaimedRow>(CLAIM, [now + input.leaseSeconds, now, input.limit]));
}

async function claimInTransaction(x: Executor, input: ClaimInput): Promise<ClaimedRow[]> {
  return claimRows(sqliteExecutor(x), input);
}

/** Largest number of bound parameters one statement may carry. */
const MAX_PARAMETERS = 32_766;

const snapshot = shared.snapshotText('INDEXED BY messages_dead');

/** SQLite's driver: plain statements in the caller's `BEGIN IMMEDIATE` transaction. */
export const sqliteDriver: Driver = {
  capabilities: {
    skipLocked: false,
    maxParameters: MAX_PARAMETERS,
    backup: true,
    serverClock: false,
  },
  ...sharedDriver,
  claimInTransaction,
  claim: (store, input) =>
    store.transact((x) => claimInTransaction(x, { ...input, now: store.clock() })),
  readFenced: async (x, leases) => readFencedRows(sqliteExecutor(x), leases),
  complete: (store, writes, options = {}) =>
    store.transact(async (x) => {
      // Read inside BEGIN IMMEDIATE: time spent waiting for the write lock counts against
      // the leases.
      const now = store.clock();
      const e = sqliteExecutor(x);
      const written = await completeIn(e, writes, now);
      const next = options.claimNext;
      // The worker: the next batch's claim in the same transaction, one commit a batch.
      if (next === undefined) return { now, written };
      return { now, written, claimed: claimRows(e, { ...next, now }) };
    }),
  extend: shared.extend,
  release: shared.release,
  readForRedrive: shared.readForRedrive,
  redrive: shared.redrive,
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages,
  // One writer at a time: the write lock already serialises enqueues and releases.
  lockKeys: async () => {},
  skip: ordering.skip,
  // Workers poll a SQLite file: nobody to notify.
  wake: async () => {},
  // No BEGIN: a read takes no write lock.
  snapshot: (store, now) =>
    store.read(async (x) => (await x.query<SnapshotRow>(snapshot(x.dialect), [now])).rows),
  storageProbes: [integrityProbe, foreignKeyProbe],
  plannerProbes: [],
  schemas,
  // BEGIN IMMEDIATE already holds the one write lock.
  lockForRecount: async () => {},
  vacuum,
  copyTo,
};
