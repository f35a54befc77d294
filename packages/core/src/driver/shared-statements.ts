/**
 * The statements both backends run with the same words (sql-text.ts): the lease
 * service's extend and release, redrive, enqueue's lookup and the status snapshot. (A
 * result is written by each backend's own result template, `<backend>/sql/complete.ts`.) The backend modules
 * (`sqlite/statements.ts`, `postgres/statements.ts`) import what they share from here.
 *
 * Every move out of `leased` is fenced in its `WHERE` on state, generation and
 * `lease_until > now`, and returns the rows it changed: zero means the lease is lost.
 */
import { DEFAULT_QUEUE } from '../queues.ts';
import type { LeaseRef } from '../types.ts';
import type { SnapshotRow, StoredForEnqueue, StoredForRedrive } from './driver.ts';
import type { Executor } from './executor.ts';
import { bySelection, type DeadSelection, selectsNothing } from './sql/dead-selection.ts';
import { overReadyQueues, readyQueues } from './sql/ready.ts';
import { params, statement, statementFor } from './sql-text.ts';

/** leased → leased until now + the lease's seconds: the worker's heartbeat. */
const extendText = statement(
  'extend',
  (
    d,
  ) => `UPDATE ${d.table('messages')} SET lease_until = ${d.nowPlus(3, 4)}, updated_at = ${d.now(3)}
WHERE event_id = ${d.param(1)} AND generation = ${d.param(2)} AND ${d.liveLease(3)}`,
);

export async function extend(
  x: Executor,
  lease: LeaseRef,
  now: number,
  leaseUntil: number,
): Promise<number> {
  const d = x.dialect;
  const values = [lease.eventId, lease.generation, d.nowValue(now), leaseUntil - now];
  return (await x.query(extendText(d), values)).changes;
}

/**
 * leased → ready, available now, the claim's attempt given back (`attempts - 1`, never
 * below 0). `generation` stays where the claim put it: the releasing holder (or anyone
 * with its token) can never ACK, and the next claim issues a newer generation.
 */
const releaseText = statement(
  'release',
  (d) => `UPDATE ${d.table('messages')} SET
  state = 'ready', available_at = ${d.now(3)}, lease_until = NULL,
  attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ${d.now(3)}
WHERE event_id = ${d.param(1)} AND generation = ${d.param(2)} AND ${d.liveLease(3)}`,
);

export async function release(x: Executor, lease: LeaseRef, now: number): Promise<number> {
  const d = x.dialect;
  const values = [lease.eventId, lease.generation, d.nowValue(now)];
  return (await x.query(releaseText(d), values)).changes;
}

/**
 * The named messages as redrive checks them, locked until COMMIT where rows lock (`FOR
 * UPDATE`: a concurrent redrive waits, then sees what this one did; SQLite's write lock
 * is already held).
 */
const redriveCheckText = statementFor(
  'redrive-check',
  (d, n) =>
    `SELECT event_id, state, pruned_at FROM ${d.table('messages')} WHERE event_id IN (${params(d, 1, n)})${d.rowLocks ? ' FOR UPDATE' : ''}`,
);

export async function readForRedrive(
  x: Executor,
  ids: readonly string[],
): Promise<StoredForRedrive[]> {
  if (ids.length === 0) return [];
  return (await x.query<StoredForRedrive>(redriveCheckText(x.dialect, ids.length), ids)).rows;
}

/** dead → ready of the selected dead messages (a pruned one never moves). */
const redriveText = bySelection(
  'redrive',
  2,
  (d, term) => `UPDATE ${d.table('messages')} SET
  state = 'ready', attempts = 0, available_at = ${d.now(1)}, lease_until = NULL, updated_at = ${d.now(1)}
WHERE state = 'dead' AND pruned_at IS NULL${term === null ? '' : ` AND ${term}`}
RETURNING event_id`,
);

export async function redrive(
  x: Executor,
  selection: DeadSelection,
  now: number,
): Promise<string[]> {
  if (selectsNothing(selection)) return [];
  const d = x.dialect;
  const { text, values } = redriveText(d, selection);
  const { rows } = await x.query<{ event_id: string }>(text, [d.nowValue(now), ...values]);
  return rows.map((r) => r.event_id).sort();
}

/** Ids per lookup statement. */
const LOOKUP_CHUNK = 250;
/**
 * Planned at each run: prepared once, PostgreSQL kept the plan it made while the table
 * was small, a scan of every message, for each lookup of an enqueue into a store that
 * grew faster than its statistics.
 */
const lookupText = statementFor(
  'enqueue-lookup',
  (d, n) =>
    `SELECT event_id, payload, payload_sha256, pruned_at, ordering_key, queue FROM ${d.table('messages')} WHERE event_id IN (${params(d, 1, n)})`,
  { replan: true },
);

/** The stored rows of `ids`, in fixed-arity chunks (one statement text for any batch). */
export async function lookupForEnqueue(
  x: Executor,
  ids: readonly string[],
): Promise<StoredForEnqueue[]> {
  const found: StoredForEnqueue[] = [];
  const text = lookupText(x.dialect, LOOKUP_CHUNK);
  for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
    const chunk = ids.slice(i, i + LOOKUP_CHUNK);
    // Pad to the fixed arity (a repeated id in IN is harmless): one statement text.
    while (chunk.length < LOOKUP_CHUNK) chunk.push(chunk[0] as string);
    found.push(...(await x.query<StoredForEnqueue>(text, chunk)).rows);
  }
  return found;
}

/**
 * The status snapshot as one statement (see `Driver.snapshot`), ?1 the bound now.
 * `deadIndex` is the backend's way to reach the partial `messages_dead` index for the
 * dead head: SQLite's planner, without statistics (no ANALYZE is ever run), would rather
 * walk every dead row of `messages_state`, so SQLite pins it with `INDEXED BY`;
 * PostgreSQL's planner finds it.
 */
export function snapshotText(deadIndex: string) {
  return statement('snapshot', (d) => {
    const counts = d.table('onceq_counts');
    const messages = d.table('messages');
    const now = d.param(1);
    return `
      ${readyQueues(d)}
      SELECT 'state' AS kind, key AS k, sum(n) AS n, NULL AS v FROM ${counts}
        WHERE kind = 'state' GROUP BY key
      UNION ALL
      SELECT 'effect', key, sum(n), sum(total) FROM ${counts}
        WHERE kind = 'effect' GROUP BY key HAVING sum(n) <> 0
      UNION ALL
      SELECT 'ready', NULL, 0, ${overReadyQueues(d, 'min', 'min(m.available_at)', `m.available_at <= ${now}`)}
      UNION ALL
      SELECT 'due', NULL, 0, ${overReadyQueues(d, 'min', 'min(m.available_at)', `m.available_at > ${now}`)}
      UNION ALL
      SELECT 'dead', NULL, 0, min(updated_at) FROM ${messages} ${deadIndex}
        WHERE state = 'dead'`;
  });
}

/**
 * The status snapshot of one queue (?2), ?1 the bound now: the rows of
 * {@link snapshotText}, counted from the queue's messages and their effects in one
 * statement (the maintained counters are the store's, not a queue's), so its cost grows
 * with the store.
 */
export const queueSnapshotText = statement('queue-snapshot', (d) => {
  const messages = d.table('messages');
  const now = d.param(1);
  const queue = d.param(2);
  return `
    SELECT 'state' AS kind, state AS k, count(*) AS n, NULL AS v FROM ${messages}
      WHERE queue = ${queue} GROUP BY state
    UNION ALL
    SELECT 'effect', e.category, count(*), sum(e.amount_cents) FROM ${d.table('effects')} e
      JOIN ${messages} m ON m.event_id = e.event_id WHERE m.queue = ${queue} GROUP BY e.category
    UNION ALL
    SELECT 'ready', NULL, 0, min(available_at) FROM ${messages}
      WHERE queue = ${queue} AND state = 'ready' AND available_at <= ${now}
    UNION ALL
    SELECT 'due', NULL, 0, min(available_at) FROM ${messages}
      WHERE queue = ${queue} AND state = 'ready' AND available_at > ${now}
    UNION ALL
    SELECT 'dead', NULL, 0, min(updated_at) FROM ${messages}
      WHERE queue = ${queue} AND state = 'dead'`;
});

/**
 * Messages by queue and state, one statement: the maintained counters' `state` rows and
 * `queue` rows (migration 0012, key `queue/state`; PostgreSQL's delta rows summed per
 * key), a few rows per queue however many messages the store holds. The `default`
 * queue has no `queue` rows (a store of one queue pays nothing for them): its counts
 * are the store's less every other queue's.
 */
export const queueCountsText = statement(
  'queue-counts',
  (d) =>
    `SELECT kind, key, sum(n) AS n FROM ${d.table('onceq_counts')}
    WHERE kind IN ('state', 'queue') GROUP BY kind, key ORDER BY kind, key`,
);

export async function queueSnapshot(
  x: Executor,
  now: number,
  queue: string,
): Promise<SnapshotRow[]> {
  return (await x.query<SnapshotRow>(queueSnapshotText(x.dialect), [now, queue])).rows;
}

export async function countsByQueue(
  x: Executor,
): Promise<{ queue: string; state: string; n: unknown }[]> {
  const { rows } = await x.query<{ kind: string; key: string; n: unknown }>(
    queueCountsText(x.dialect),
  );
  const byQueue: { queue: string; state: string; n: number }[] = [];
  const defaults = new Map<string, number>();
  for (const { kind, key, n } of rows) {
    if (kind === 'state') {
      defaults.set(key, (defaults.get(key) ?? 0) + Number(n));
      continue;
    }
    const slash = key.lastIndexOf('/');
    const state = key.slice(slash + 1);
    byQueue.push({ queue: key.slice(0, slash), state, n: Number(n) });
    defaults.set(state, (defaults.get(state) ?? 0) - Number(n));
  }
  for (const [state, n] of defaults) byQueue.push({ queue: DEFAULT_QUEUE, state, n });
  const order = (row: { queue: string; state: string }) => `${row.queue}/${row.state}`;
  return byQueue.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}
