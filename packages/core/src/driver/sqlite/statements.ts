/**
 * SQLite's {@link Driver}. A statement here costs no round trip (the database is in the
 * process), so the protocol keeps its plain statements: the claim is the recovery UPDATE
 * then the claim UPDATE (sql/claim.ts), a result is the result template (sql/complete.ts:
 * the fenced ACK, then, if it matched, its rows), each in the caller's `BEGIN IMMEDIATE`
 * transaction, which already holds the one write lock (no row locks needed, no `SKIP
 * LOCKED` to have).
 *
 * The hot statements (recovery, claim, fence read, row inserts, ACK, failure) run
 * synchronously on the connection's cached prepared statements ({@link SqliteExecutor}):
 * no promise per statement, and **one row per execution**, like the bare baseline of
 * `bun run bench`: a multi-row `UPDATE … WHERE event_id IN (…) AND (… OR …)` costs SQLite
 * more CPU a message than single-row UPDATEs. The ACK and the failure are the words
 * PostgreSQL runs too (shared-statements.ts).
 */

import type { LeaseRef } from '../../types.ts';
import { recordResults } from '../completion-write.ts';
import type { ClaimedRow, ClaimInput, Driver, FencedRow, SnapshotRow } from '../driver.ts';
import type { Executor } from '../executor.ts';
import * as shared from '../shared-statements.ts';
import * as ordering from '../sql/ordering.ts';
import { sharedDriver } from '../sql/shared-driver.ts';
import { sqlText } from '../sql-text.ts';
import { type SqliteExecutor, sqliteExecutor } from './executor.ts';
import { claimRows } from './sql/claim.ts';
import { sqliteTemplate } from './sql/complete.ts';
import { insertMessages } from './sql/insert-messages.ts';
import { foreignKeyProbe, integrityProbe } from './sql/integrity.ts';
import { schemas } from './sql/schema.ts';
import { copyTo, releaseFreePages, storageBytes, vacuum } from './sql/vacuum.ts';

/** One message for apply's and fail's fence read (no lock needed: the transaction holds the write lock). */
const READ_FENCED = sqlText(
  'read-fenced',
  1,
  `SELECT event_id, payload, state, generation, attempts, lease_until
FROM messages WHERE event_id = ?1`,
);

function readFencedRows(x: SqliteExecutor, leases: readonly LeaseRef[]): FencedRow[] {
  const rows: FencedRow[] = [];
  for (const lease of leases) {
    const row = x.get<FencedRow>(READ_FENCED, [lease.eventId]);
    if (row !== null) rows.push(row);
  }
  return rows;
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
  // One transaction a batch: the result template, and the worker's next claim in it.
  complete: (store, writes, options = {}) =>
    store.transact(async (x) => {
      // Read inside BEGIN IMMEDIATE: time spent waiting for the write lock counts against
      // the leases.
      const now = store.clock();
      const next = options.claimNext;
      const claim = next === undefined ? undefined : { ...next, now };
      return { now, ...(await recordResults(x, writes, now, claim, sqliteTemplate)) };
    }),
  extend: shared.extend,
  release: shared.release,
  readForRedrive: shared.readForRedrive,
  redrive: shared.redrive,
  lookupForEnqueue: shared.lookupForEnqueue,
  insertMessages,
  // A keyed message's row carries its position (`seq`): nothing more to write.
  insertKeyPositions: async () => {},
  // One writer at a time: the write lock already serialises enqueues and releases.
  lockKeys: async () => {},
  skip: async (x, ids, now) => ordering.skippedIds(await ordering.skipRows(x, ids, now)),
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
  releaseFreePages,
  storageBytes,
  copyTo,
};
