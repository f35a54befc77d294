/**
 * Every statement of the outbox (delivery/), written once for both backends with the dialect's
 * placeholders, tables and clock. A delivery is leased and fenced like a message: a
 * claim bumps `generation` and sets `lease_until`; an attempt's outcome is recorded only
 * while the row is still `leased` at that generation (zero rows: another sender took it
 * over after this one's lease expired, and its outcome is dropped). On PostgreSQL the
 * claim skips rows another sender holds (`FOR UPDATE SKIP LOCKED`).
 */
import type { Executor } from '../executor.ts';
import { keyPositions, params, type SqlDialect, statement, statementFor } from '../sql-text.ts';

/** One claimed attempt: what to send and the lease its outcome is fenced by. */
export interface ClaimedDelivery {
  readonly eventId: string;
  readonly key: string;
  readonly endpoint: string;
  readonly body: string;
  /** This attempt's number in the current cycle, 1-based. */
  readonly attempt: number;
  readonly generation: number;
}

/** How an attempt ended, as the sender decided it. */
export type DeliveryOutcome =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly delaySeconds: number }
  | { readonly kind: 'dead' }
  /** 410 Gone: the endpoint is disabled; the delivery waits without spending an attempt. */
  | { readonly kind: 'gone' };

/** One attempt's record: its outcome and what the attempt log keeps. */
export interface AttemptRecord {
  readonly delivery: ClaimedDelivery;
  readonly outcome: DeliveryOutcome;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly response: string | null;
  readonly error: string | null;
}

const recoverText = statement(
  'delivery-recover',
  (d) => `UPDATE ${d.table('deliveries')}
    SET state = CASE WHEN attempts >= ${d.param(3)} THEN 'dead' ELSE 'pending' END,
      finished_at = CASE WHEN attempts >= ${d.param(3)} THEN ${d.now(1)} ELSE NULL END,
      available_at = lease_until, lease_until = NULL,
      last_error = 'the sender stopped during the attempt: its lease expired'
    WHERE endpoint = ${d.param(2)} AND state = 'leased' AND lease_until <= ${d.now(1)}`,
);

/**
 * How long a delivery held behind its key waits before a claim looks at it again, in
 * seconds. The delivery before it being delivered releases it at once (see
 * {@link recordAttempts}); the look again only catches a blocker that went some other
 * way (a dead one the dedup window forgot, a row changed by hand).
 */
export const HELD_RECHECK_SECONDS = 300;

/**
 * Whether the delivery `dl` (of the message `m`) must wait for its key: its message has
 * an ordering key and the delivery just before it on the same endpoint is unfinished
 * (pending, leased or dead). Within a key, deliveries go out one at a time, in the order
 * of their messages' `seq`, and within one message in the order of their keys (shorter
 * first, so the default keys 1, 2 … 10 keep the list's order). The one just before it
 * is an earlier key of the same message, else one of the nearest earlier message of the
 * key (in its queue: keys order within a queue) that has a delivery to this endpoint. A
 * key's delivered ones are a prefix of its order, so nothing older needs reading,
 * however long the key's history. A delivery of a message without a key (or whose
 * message row is gone) never waits.
 */
function blocked(d: SqlDialect): string {
  const deliveries = d.table('deliveries');
  return `m.ordering_key IS NOT NULL AND (
      EXISTS (SELECT 1 FROM ${deliveries} dk
        WHERE dk.event_id = dl.event_id AND dk.endpoint = dl.endpoint AND dk.state <> 'delivered'
          AND (length(dk.key) < length(dl.key) OR (length(dk.key) = length(dl.key) AND dk.key < dl.key)))
      OR EXISTS (SELECT 1 FROM ${deliveries} dk
        WHERE dk.endpoint = dl.endpoint AND dk.state <> 'delivered' AND dk.event_id = (
          SELECT mk.event_id FROM ${keyPositions(d)} mk
          WHERE mk.queue = m.queue AND mk.ordering_key = m.ordering_key AND mk.seq < m.seq
            AND EXISTS (SELECT 1 FROM ${deliveries} dx
              WHERE dx.event_id = mk.event_id AND dx.endpoint = dl.endpoint)
          ORDER BY mk.seq DESC LIMIT 1)))`;
}

/**
 * The next due pending deliveries of an endpoint, each with whether it must wait for
 * its key; on PostgreSQL locked, skipping rows another sender holds. Ordered by
 * `available_at` alone, the order of `deliveries_due`: a tie-breaker column would sort
 * every due row at each claim (due rows share `available_at`: a new delivery's is 0).
 */
const candidatesText = statement(
  'delivery-candidates',
  (d) => `SELECT dl.event_id, dl.key, CASE WHEN ${blocked(d)} THEN 1 ELSE 0 END AS blocked
    FROM ${d.table('deliveries')} dl
    LEFT JOIN ${d.table('messages')} m ON m.event_id = dl.event_id
    WHERE dl.endpoint = ${d.param(2)} AND dl.state = 'pending' AND dl.available_at <= ${d.now(1)}
    ORDER BY dl.available_at
    LIMIT ${d.limit(3)}${d.rowLocks ? ' FOR UPDATE OF dl SKIP LOCKED' : ''}`,
);

/** `(event_id, key)` pairs bound from placeholder `from` on, as a VALUES list. */
function pairs(d: SqlDialect, from: number, n: number): string {
  return Array.from(
    { length: n },
    (_, i) =>
      `(CAST(${d.param(from + 2 * i)} AS TEXT), CAST(${d.param(from + 2 * i + 1)} AS TEXT))`,
  ).join(', ');
}

/** Leases `n` of the candidates (?3 …) for ?2 seconds: they were pending and are not held. */
const leaseText = statementFor(
  'delivery-lease',
  (d, n) => `UPDATE ${d.table('deliveries')}
    SET state = 'leased', attempts = attempts + 1, generation = generation + 1,
      lease_until = ${d.nowPlus(1, 2)}
    WHERE state = 'pending' AND (event_id, key) IN (VALUES ${pairs(d, 3, n)})
    RETURNING event_id, key, endpoint, body, attempts, generation`,
);

/**
 * Holds `n` candidates (?3 …) that must wait for their key: out of the due range until
 * the delivery before them is delivered (which releases the next one at once) or the
 * look again ?2 seconds on. Whether each must wait is read again here: on PostgreSQL a
 * sender that recorded the blocker as delivered after the candidates were read is seen
 * by this statement, and one that records it later waits for this lock and releases.
 */
const holdText = statementFor(
  'delivery-hold',
  (d, n) => `UPDATE ${d.table('deliveries')} AS dl SET available_at = ${d.nowPlus(1, 2)}
    FROM ${d.table('messages')} m
    WHERE m.event_id = dl.event_id AND dl.state = 'pending'
      AND (dl.event_id, dl.key) IN (VALUES ${pairs(d, 3, n)}) AND ${blocked(d)}`,
);

/**
 * Leases up to `limit` due deliveries of `endpoint` for `leaseSeconds`, after moving its
 * expired leases back to pending (or to dead once `maxAttempts` are spent). One
 * transaction: the caller's `x`. A due delivery that must wait for its key is held (out
 * of the due range) rather than read again at every claim: a claim reads the rows it
 * leases and the ones it holds, never the same held row twice.
 */
export async function claimDeliveries(
  x: Executor,
  endpoint: string,
  limit: number,
  now: number,
  leaseSeconds: number,
  maxAttempts: number,
): Promise<ClaimedDelivery[]> {
  const d = x.dialect;
  const at = d.nowValue(now);
  await x.query(recoverText(d), [at, endpoint, maxAttempts]);
  const claimed: ClaimedDelivery[] = [];
  while (claimed.length < limit) {
    const want = limit - claimed.length;
    const { rows } = await x.query<{ event_id: string; key: string; blocked: number }>(
      candidatesText(d),
      [at, endpoint, want],
    );
    const free = rows.filter((r) => Number(r.blocked) === 0);
    const held = rows.filter((r) => Number(r.blocked) !== 0);
    if (held.length > 0) {
      await x.query(holdText(d, held.length), [
        at,
        HELD_RECHECK_SECONDS,
        ...held.flatMap((r) => [r.event_id, r.key]),
      ]);
    }
    if (free.length > 0) {
      const leased = await x.query<{
        event_id: string;
        key: string;
        endpoint: string;
        body: string;
        attempts: number;
        generation: number;
      }>(leaseText(d, free.length), [
        at,
        leaseSeconds,
        ...free.flatMap((r) => [r.event_id, r.key]),
      ]);
      // In the candidates' order (RETURNING's is the engine's).
      const byId = new Map(leased.rows.map((r) => [`${r.event_id}\n${r.key}`, r]));
      for (const c of free) {
        const r = byId.get(`${c.event_id}\n${c.key}`);
        if (r === undefined) continue;
        claimed.push({
          eventId: r.event_id,
          key: r.key,
          endpoint: r.endpoint,
          body: r.body,
          attempt: Number(r.attempts),
          generation: Number(r.generation),
        });
      }
    }
    // Fewer due rows than asked: nothing more is due. None held: the next read would
    // return what this one left (on PostgreSQL, rows other senders hold). Otherwise read
    // on: a claim that leases fewer than it asked tells the sender nothing more is due
    // now, so it must not stop at a page of set-aside rows.
    if (rows.length < want || held.length === 0) break;
  }
  return claimed;
}

/** Values bound per record by {@link recordText}. */
const RECORD_WIDTH = 8;

/**
 * The outcomes of `n` attempts in one statement, each fenced by its lease (still
 * `leased` at its generation): `delivered` and `dead` finish the row; `pending` (a retry,
 * or a 410's wait, which gives its attempt back) makes it due again after its delay.
 * Returns the rows it changed: the others were taken over by another sender.
 */
const recordText = statementFor('delivery-record', (d, n) => {
  const rows = Array.from({ length: n }, (_, i) => {
    const p = (j: number) => d.param(2 + i * RECORD_WIDTH + j);
    return `(CAST(${p(0)} AS TEXT), CAST(${p(1)} AS TEXT), CAST(${p(2)} AS BIGINT), CAST(${p(3)} AS TEXT),
      CAST(${p(4)} AS BIGINT), CAST(${p(5)} AS BIGINT), CAST(${p(6)} AS BIGINT), CAST(${p(7)} AS TEXT))`;
  });
  return `WITH v (v_event, v_key, v_generation, v_state, v_delay, v_refund, v_status, v_error) AS (
      VALUES ${rows.join(',\n      ')})
    UPDATE ${d.table('deliveries')} AS dl
    SET state = v.v_state, lease_until = NULL,
      finished_at = CASE WHEN v.v_state = 'pending' THEN NULL ELSE ${d.now(1)} END,
      available_at = CASE WHEN v.v_state = 'pending' THEN ${d.now(1)} + v.v_delay ELSE dl.available_at END,
      attempts = dl.attempts - v.v_refund, last_status = v.v_status, last_error = v.v_error
    FROM v
    WHERE dl.event_id = v.v_event AND dl.key = v.v_key AND dl.state = 'leased'
      AND dl.generation = v.v_generation
    RETURNING event_id, key`;
});

/** The attempt log rows of `n` recorded attempts, in one INSERT. */
const logText = statementFor('delivery-attempt-log', (d, n) => {
  const rows = Array.from({ length: n }, (_, i) => {
    const p = (j: number) => d.param(2 + i * 8 + j);
    return `(${p(0)}, ${p(1)}, ${p(2)}, ${p(3)}, ${d.now(1)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)})`;
  });
  return `INSERT INTO ${d.table('delivery_attempts')}
    (event_id, key, generation, attempt, at, status, latency_ms, response, error)
    VALUES ${rows.join(', ')}`;
});

const disableText = statement(
  'delivery-disable',
  (d) => `INSERT INTO ${d.table('disabled_endpoints')} (endpoint, disabled_at, reason)
    VALUES (${d.param(2)}, ${d.now(1)}, ${d.param(3)}) ON CONFLICT (endpoint) DO NOTHING`,
);

/** Of the `n` event ids ?1 …, those whose message has an ordering key, with its queue, key and `seq`. */
const keyedText = statementFor(
  'delivery-keyed-messages',
  (d, n) => `SELECT event_id, queue, ordering_key, seq FROM ${d.table('messages')}
    WHERE ordering_key IS NOT NULL AND event_id IN (${params(d, 1, n)})`,
);

/**
 * Releases what waits behind a delivered delivery of the message ?3 (queue ?6,
 * ordering key ?4, `seq` ?5) to the endpoint ?2: its message's later deliveries to that
 * endpoint, else those of the key's next message that has one. Due now (one of them is
 * the next in order; a claim holds the others again).
 */
const releaseNextText = statement(
  'delivery-release-next',
  (d) => `UPDATE ${d.table('deliveries')}
    SET available_at = CASE WHEN available_at > ${d.now(1)} THEN ${d.now(1)} ELSE available_at END
    WHERE state = 'pending' AND endpoint = ${d.param(2)} AND event_id = COALESCE(
      (SELECT dx.event_id FROM ${d.table('deliveries')} dx
        WHERE dx.event_id = ${d.param(3)} AND dx.endpoint = ${d.param(2)} AND dx.state = 'pending' LIMIT 1),
      (SELECT mk.event_id FROM ${keyPositions(d)} mk
        WHERE mk.queue = ${d.param(6)} AND mk.ordering_key = ${d.param(4)} AND mk.seq > ${d.param(5)}
          AND EXISTS (SELECT 1 FROM ${d.table('deliveries')} dx
            WHERE dx.event_id = mk.event_id AND dx.endpoint = ${d.param(2)})
        ORDER BY mk.seq LIMIT 1))`,
);

/** Releases, for each delivered record of a keyed message, what waits behind it. */
async function releaseNext(x: Executor, delivered: readonly AttemptRecord[], at: unknown) {
  if (delivered.length === 0) return;
  const ids = [...new Set(delivered.map((r) => r.delivery.eventId))];
  const { rows } = await x.query<{
    event_id: string;
    queue: string;
    ordering_key: string;
    seq: number;
  }>(keyedText(x.dialect, ids.length), ids);
  if (rows.length === 0) return;
  const keyed = new Map(rows.map((r) => [r.event_id, r]));
  for (const r of delivered) {
    const m = keyed.get(r.delivery.eventId);
    if (m === undefined) continue;
    await x.query(releaseNextText(x.dialect), [
      at,
      r.delivery.endpoint,
      m.event_id,
      m.ordering_key,
      m.seq,
      m.queue,
    ]);
  }
}

/**
 * Records the attempts of `records` in the caller's transaction, in one statement
 * (plus one for their attempt log): each fenced by its lease (a record whose lease
 * another sender took over changes nothing and is not logged). A delivered delivery of
 * a keyed message releases the one waiting behind it (one read for the batch, then one
 * statement per such delivery). Returns how many were recorded.
 */
export async function recordAttempts(
  x: Executor,
  records: readonly AttemptRecord[],
  now: number,
): Promise<number> {
  if (records.length === 0) return 0;
  const d = x.dialect;
  const at = d.nowValue(now);
  const values: unknown[] = [at];
  for (const r of records) {
    const { delivery: c, outcome } = r;
    const state = outcome.kind === 'retry' || outcome.kind === 'gone' ? 'pending' : outcome.kind;
    values.push(
      c.eventId,
      c.key,
      c.generation,
      state,
      outcome.kind === 'retry' ? outcome.delaySeconds : 0,
      outcome.kind === 'gone' ? 1 : 0,
      r.status,
      r.error,
    );
  }
  const { rows } = await x.query<{ event_id: string; key: string }>(
    recordText(d, records.length),
    values,
  );
  if (rows.length === 0) return 0;
  const fenced = new Set(rows.map((r) => `${r.event_id}\n${r.key}`));
  const recorded = records.filter((r) => fenced.has(`${r.delivery.eventId}\n${r.delivery.key}`));
  const log: unknown[] = [at];
  for (const r of recorded) {
    const c = r.delivery;
    log.push(c.eventId, c.key, c.generation, c.attempt, r.status, r.latencyMs, r.response, r.error);
  }
  await x.query(logText(d, recorded.length), log);
  await releaseNext(
    x,
    recorded.filter((r) => r.outcome.kind === 'delivered'),
    at,
  );
  const gone = new Set(
    recorded.filter((r) => r.outcome.kind === 'gone').map((r) => r.delivery.endpoint),
  );
  for (const endpoint of gone) {
    await x.query(disableText(d), [at, endpoint, 'it answered 410 Gone']);
  }
  return recorded.length;
}

/**
 * Gives leases back that were never attempted (the sender is stopping, or a lease ran
 * too short to start an attempt under it): pending again, due at once, the attempt the
 * claim counted returned. Fenced by generation; nothing is logged.
 */
const releaseText = statementFor(
  'delivery-release',
  (d, n) => `UPDATE ${d.table('deliveries')}
    SET state = 'pending', lease_until = NULL, attempts = attempts - 1
    WHERE state = 'leased' AND (event_id, key, generation) IN (VALUES ${Array.from(
      { length: n },
      (_, i) =>
        `(CAST(${d.param(1 + i * 3)} AS TEXT), CAST(${d.param(2 + i * 3)} AS TEXT), CAST(${d.param(3 + i * 3)} AS BIGINT))`,
    ).join(', ')})`,
);

/** Releases the leases of `deliveries`, never attempted; returns how many were still held. */
export async function releaseDeliveries(
  x: Executor,
  deliveries: readonly ClaimedDelivery[],
): Promise<number> {
  if (deliveries.length === 0) return 0;
  const values = deliveries.flatMap((c) => [c.eventId, c.key, c.generation]);
  const { changes } = await x.query(releaseText(x.dialect, deliveries.length), values);
  return changes;
}

const disabledText = statement(
  'delivery-disabled',
  (d) =>
    `SELECT endpoint, disabled_at, reason FROM ${d.table('disabled_endpoints')} ORDER BY endpoint`,
);

/** The endpoints disabled by a 410, with when and why. */
export async function disabledEndpoints(
  x: Executor,
): Promise<{ endpoint: string; disabledAt: number; reason: string }[]> {
  const { rows } = await x.query<{ endpoint: string; disabled_at: number; reason: string }>(
    disabledText(x.dialect),
  );
  return rows.map((r) => ({
    endpoint: r.endpoint,
    disabledAt: Number(r.disabled_at),
    reason: r.reason,
  }));
}

/** A delivery row as the lists read it. */
export interface DeliveryRow {
  event_id: string;
  key: string;
  endpoint: string;
  state: 'pending' | 'leased' | 'delivered' | 'dead';
  attempts: number;
  available_at: number;
  last_status: number | null;
  last_error: string | null;
  finished_at: number | null;
  body_bytes: number;
}

/** One row of the attempt log. */
export interface AttemptRow {
  attempt: number;
  generation: number;
  at: number;
  status: number | null;
  latency_ms: number;
  response: string | null;
  error: string | null;
}

const COLUMNS = `event_id, key, endpoint, state, attempts, available_at, last_status, last_error,
  finished_at, length(body) AS body_bytes`;

/** Deliveries by `(event_id, key)`, filtered by state and endpoint, at most `limit`. */
export async function selectDeliveries(
  x: Executor,
  filter: { state?: string; endpoint?: string; limit: number },
): Promise<DeliveryRow[]> {
  const d = x.dialect;
  const where: string[] = [];
  const values: unknown[] = [];
  if (filter.state !== undefined) {
    values.push(filter.state);
    where.push(`state = ${d.param(values.length)}`);
  }
  if (filter.endpoint !== undefined) {
    values.push(filter.endpoint);
    where.push(`endpoint = ${d.param(values.length)}`);
  }
  values.push(filter.limit);
  const { rows } = await x.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM ${d.table('deliveries')}
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY event_id, key LIMIT ${d.limit(values.length)}`,
    values,
  );
  return rows;
}

/** One delivery and its attempt log (oldest first), or null when there is none. */
export async function selectDelivery(
  x: Executor,
  eventId: string,
  key: string,
): Promise<{ row: DeliveryRow; attempts: AttemptRow[] } | null> {
  const d = x.dialect;
  const { rows } = await x.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM ${d.table('deliveries')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}`,
    [eventId, key],
  );
  const row = rows[0];
  if (row === undefined) return null;
  const log = await x.query<AttemptRow>(
    `SELECT attempt, generation, at, status, latency_ms, response, error
     FROM ${d.table('delivery_attempts')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}
     ORDER BY generation`,
    [eventId, key],
  );
  return { row, attempts: log.rows };
}

/**
 * Pending, leased and dead deliveries per endpoint, each state counted in its partial
 * index (`deliveries_due`, `deliveries_lease`, `deliveries_dead`): the work of the
 * outbox that is not finished, read without touching the delivered rows.
 */
const unfinishedText = statement(
  'delivery-count-unfinished',
  (d) => `SELECT endpoint, 'pending' AS state, count(*) AS n FROM ${d.table('deliveries')}
      WHERE state = 'pending' GROUP BY endpoint
    UNION ALL SELECT endpoint, 'leased', count(*) FROM ${d.table('deliveries')}
      WHERE state = 'leased' GROUP BY endpoint
    UNION ALL SELECT endpoint, 'dead', count(*) FROM ${d.table('deliveries')}
      WHERE state = 'dead' GROUP BY endpoint`,
);

/** Delivered deliveries per endpoint: every delivered row is read (no counter keeps them). */
const deliveredText = statement(
  'delivery-count-delivered',
  (d) => `SELECT endpoint, 'delivered' AS state, count(*) AS n FROM ${d.table('deliveries')}
    WHERE state = 'delivered' GROUP BY endpoint`,
);

/** Attempts logged per endpoint: every attempt row is read. */
const attemptsText = statement(
  'delivery-count-attempts',
  (d) => `SELECT dl.endpoint, count(*) AS n FROM ${d.table('delivery_attempts')} a
    JOIN ${d.table('deliveries')} dl ON dl.event_id = a.event_id AND dl.key = a.key
    GROUP BY dl.endpoint`,
);

/** Deliveries per endpoint and state, and attempts logged per endpoint. */
export async function countDeliveries(x: Executor): Promise<{
  states: { endpoint: string; state: DeliveryRow['state']; n: number }[];
  attempts: { endpoint: string; n: number }[];
}> {
  type Count = { endpoint: string; state: DeliveryRow['state']; n: number };
  const unfinished = await x.query<Count>(unfinishedText(x.dialect));
  const delivered = await x.query<Count>(deliveredText(x.dialect));
  const attempts = await x.query<{ endpoint: string; n: number }>(attemptsText(x.dialect));
  return { states: [...unfinished.rows, ...delivered.rows], attempts: attempts.rows };
}

/** The state of one delivery, locked until COMMIT where writers are concurrent; null when there is none. */
export async function lockDeliveryState(
  x: Executor,
  eventId: string,
  key: string,
): Promise<string | null> {
  const d = x.dialect;
  const { rows } = await x.query<{ state: string }>(
    `SELECT state FROM ${d.table('deliveries')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}${d.rowLocks ? ' FOR UPDATE' : ''}`,
    [eventId, key],
  );
  return rows[0]?.state ?? null;
}

/**
 * Dead deliveries back to pending for a new cycle (attempts 0, due now): the one named
 * by `eventId` and `key`, or every dead one (of `endpoint`, if given). Returns those moved.
 */
export async function redriveDead(
  x: Executor,
  now: number,
  which: { eventId: string; key: string } | { endpoint?: string },
): Promise<{ event_id: string; key: string }[]> {
  const d = x.dialect;
  const set = `state = 'pending', attempts = 0, available_at = ${d.now(1)}, finished_at = NULL`;
  const [where, values] =
    'eventId' in which
      ? [`event_id = ${d.param(2)} AND key = ${d.param(3)}`, [which.eventId, which.key]]
      : which.endpoint === undefined
        ? ['TRUE', []]
        : [`endpoint = ${d.param(2)}`, [which.endpoint]];
  const { rows } = await x.query<{ event_id: string; key: string }>(
    `UPDATE ${d.table('deliveries')} SET ${set} WHERE state = 'dead' AND ${where} RETURNING event_id, key`,
    [d.nowValue(now), ...values],
  );
  return rows;
}

/** Removes an endpoint from the disabled ones; whether it was there. */
export async function enableDisabledEndpoint(x: Executor, endpoint: string): Promise<boolean> {
  const { changes } = await x.query(
    `DELETE FROM ${x.dialect.table('disabled_endpoints')} WHERE endpoint = ${x.dialect.param(1)}`,
    [endpoint],
  );
  return changes > 0;
}
