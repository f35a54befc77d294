/**
 * Every statement of the outbox, written once for both backends with the dialect's
 * placeholders, tables and clock. A delivery is leased and fenced like a message: a
 * claim bumps `generation` and sets `lease_until`; an attempt's outcome is recorded only
 * while the row is still `leased` at that generation (zero rows: another sender took it
 * over after this one's lease expired, and its outcome is dropped). On PostgreSQL the
 * claim skips rows another sender holds (`FOR UPDATE SKIP LOCKED`).
 */
import type { Executor } from '../driver/executor.ts';
import { statement } from '../driver/sql-text.ts';

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
export type Outcome =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly delaySeconds: number }
  | { readonly kind: 'dead' }
  /** 410 Gone: the endpoint is disabled; the delivery waits without spending an attempt. */
  | { readonly kind: 'gone' };

/** One attempt's record: its outcome and what the attempt log keeps. */
export interface AttemptRecord {
  readonly delivery: ClaimedDelivery;
  readonly outcome: Outcome;
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

const claimText = statement(
  'delivery-claim',
  (d) => `UPDATE ${d.table('deliveries')}
    SET state = 'leased', attempts = attempts + 1, generation = generation + 1,
      lease_until = ${d.nowPlus(1, 4)}
    WHERE (event_id, key) IN (
      SELECT event_id, key FROM ${d.table('deliveries')}
      WHERE endpoint = ${d.param(2)} AND state = 'pending' AND available_at <= ${d.now(1)}
      ORDER BY available_at, event_id, key
      LIMIT ${d.param(3)}${d.rowLocks ? ' FOR UPDATE SKIP LOCKED' : ''})
    RETURNING event_id, key, endpoint, body, attempts, generation`,
);

/**
 * Leases up to `limit` due deliveries of `endpoint` for `leaseSeconds`, after moving its
 * expired leases back to pending (or to dead once `maxAttempts` are spent). One
 * transaction: the caller's `x`.
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
  await x.query(recoverText(d), [d.nowValue(now), endpoint, maxAttempts]);
  const { rows } = await x.query<{
    event_id: string;
    key: string;
    endpoint: string;
    body: string;
    attempts: number;
    generation: number;
  }>(claimText(d), [d.nowValue(now), endpoint, limit, leaseSeconds]);
  return rows.map((r) => ({
    eventId: r.event_id,
    key: r.key,
    endpoint: r.endpoint,
    body: r.body,
    attempt: Number(r.attempts),
    generation: Number(r.generation),
  }));
}

const finishText = statement(
  'delivery-finish',
  (d) => `UPDATE ${d.table('deliveries')}
    SET state = ${d.param(4)}, lease_until = NULL, finished_at = ${d.now(1)},
      last_status = ${d.param(5)}, last_error = ${d.param(6)}
    WHERE event_id = ${d.param(2)} AND key = ${d.param(3)} AND state = 'leased'
      AND generation = ${d.param(7)}`,
);

const retryText = statement(
  'delivery-retry',
  (d) => `UPDATE ${d.table('deliveries')}
    SET state = 'pending', lease_until = NULL, available_at = ${d.nowPlus(1, 4)},
      attempts = attempts - ${d.param(8)},
      last_status = ${d.param(5)}, last_error = ${d.param(6)}
    WHERE event_id = ${d.param(2)} AND key = ${d.param(3)} AND state = 'leased'
      AND generation = ${d.param(7)}`,
);

const attemptText = statement(
  'delivery-attempt',
  (d) => `INSERT INTO ${d.table('delivery_attempts')}
    (event_id, key, generation, attempt, at, status, latency_ms, response, error)
    VALUES (${d.param(2)}, ${d.param(3)}, ${d.param(4)}, ${d.param(5)}, ${d.now(1)},
      ${d.param(6)}, ${d.param(7)}, ${d.param(8)}, ${d.param(9)})`,
);

const disableText = statement(
  'delivery-disable',
  (d) => `INSERT INTO ${d.table('disabled_endpoints')} (endpoint, disabled_at, reason)
    VALUES (${d.param(2)}, ${d.now(1)}, ${d.param(3)}) ON CONFLICT (endpoint) DO NOTHING`,
);

/**
 * Records the attempts of `records` in the caller's transaction: each fenced by its
 * lease (a record whose lease another sender took over changes nothing and is not
 * logged). Returns how many were recorded.
 */
export async function recordAttempts(
  x: Executor,
  records: readonly AttemptRecord[],
  now: number,
): Promise<number> {
  const d = x.dialect;
  const at = d.nowValue(now);
  let recorded = 0;
  for (const r of records) {
    const { delivery: c, outcome } = r;
    const fenced =
      outcome.kind === 'delivered' || outcome.kind === 'dead'
        ? await x.query(finishText(d), [
            at,
            c.eventId,
            c.key,
            outcome.kind,
            r.status,
            r.error,
            c.generation,
          ])
        : await x.query(retryText(d), [
            at,
            c.eventId,
            c.key,
            outcome.kind === 'retry' ? outcome.delaySeconds : 0,
            r.status,
            r.error,
            c.generation,
            outcome.kind === 'gone' ? 1 : 0,
          ]);
    if (fenced.changes !== 1) continue;
    recorded += 1;
    await x.query(attemptText(d), [
      at,
      c.eventId,
      c.key,
      c.generation,
      c.attempt,
      r.status,
      r.latencyMs,
      r.response,
      r.error,
    ]);
    if (outcome.kind === 'gone') {
      await x.query(disableText(d), [at, c.endpoint, 'it answered 410 Gone']);
    }
  }
  return recorded;
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
