/**
 * The outbox as operators see it and change it: the list (`onceq deliveries`), one
 * delivery with its attempt log, counts per endpoint and state (metrics), redrive of dead
 * deliveries, and re-enabling an endpoint a 410 disabled.
 */
import type { Store } from '../driver/backend.ts';
import { OnceqError } from '../errors.ts';
import { webhookId } from './endpoint.ts';
import { disabledEndpoints } from './statements.ts';

export const DELIVERY_STATES = ['pending', 'leased', 'delivered', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One delivery as listed. */
export interface DeliveryView {
  readonly webhookId: string;
  readonly eventId: string;
  readonly key: string;
  readonly endpoint: string;
  readonly state: DeliveryState;
  /** Attempts of the current cycle (a redrive starts a new one). */
  readonly attempts: number;
  readonly availableAt: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly finishedAt: number | null;
  readonly bodyBytes: number;
}

/** One logged attempt. */
export interface AttemptView {
  readonly attempt: number;
  readonly generation: number;
  readonly at: number;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly response: string | null;
  readonly error: string | null;
}

interface Row {
  event_id: string;
  key: string;
  endpoint: string;
  state: DeliveryState;
  attempts: number;
  available_at: number;
  last_status: number | null;
  last_error: string | null;
  finished_at: number | null;
  body_bytes: number;
}

const COLUMNS = `event_id, key, endpoint, state, attempts, available_at, last_status, last_error,
  finished_at, length(body) AS body_bytes`;

function view(r: Row): DeliveryView {
  return {
    webhookId: webhookId(r.event_id, r.key),
    eventId: r.event_id,
    key: r.key,
    endpoint: r.endpoint,
    state: r.state,
    attempts: Number(r.attempts),
    availableAt: Number(r.available_at),
    lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error,
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
    bodyBytes: Number(r.body_bytes),
  };
}

/** A webhook id that names no delivery, or is not one. Exit code 4. */
export class DeliveryNotFoundError extends OnceqError {
  constructor(id: string) {
    super('not_found', 4, `no delivery with webhook id ${JSON.stringify(id)}`);
  }
}

/** Redrive named deliveries that are not dead; nothing changed. Exit code 4. */
export class DeliveryNotDeadError extends OnceqError {
  constructor(id: string, state: string) {
    super('not_dead', 4, `delivery ${id} is ${state}, not dead: nothing was redriven`);
  }
}

/** `eventId:key` split at its last colon (a key holds none). */
function splitId(id: string): { eventId: string; key: string } | null {
  const colon = id.lastIndexOf(':');
  if (colon <= 0 || colon === id.length - 1) return null;
  return { eventId: id.slice(0, colon), key: id.slice(colon + 1) };
}

/** Deliveries, oldest event first, filtered by state and endpoint, at most `limit`. */
export async function listDeliveries(
  store: Store,
  options: { state?: DeliveryState; endpoint?: string; limit?: number } = {},
): Promise<DeliveryView[]> {
  return store.read(async (x) => {
    const d = x.dialect;
    const where: string[] = [];
    const values: unknown[] = [];
    if (options.state !== undefined) {
      values.push(options.state);
      where.push(`state = ${d.param(values.length)}`);
    }
    if (options.endpoint !== undefined) {
      values.push(options.endpoint);
      where.push(`endpoint = ${d.param(values.length)}`);
    }
    values.push(options.limit ?? 1000);
    const { rows } = await x.query<Row>(
      `SELECT ${COLUMNS} FROM ${d.table('deliveries')}
       ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY event_id, key LIMIT ${d.param(values.length)}`,
      values,
    );
    return rows.map(view);
  });
}

/** One delivery by its webhook id, with every attempt logged for it (oldest first). */
export async function showDelivery(
  store: Store,
  id: string,
): Promise<{ delivery: DeliveryView; attempts: AttemptView[] }> {
  const parts = splitId(id);
  if (parts === null) throw new DeliveryNotFoundError(id);
  return store.read(async (x) => {
    const d = x.dialect;
    const { rows } = await x.query<Row>(
      `SELECT ${COLUMNS} FROM ${d.table('deliveries')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}`,
      [parts.eventId, parts.key],
    );
    const row = rows[0];
    if (row === undefined) throw new DeliveryNotFoundError(id);
    const log = await x.query<{
      attempt: number;
      generation: number;
      at: number;
      status: number | null;
      latency_ms: number;
      response: string | null;
      error: string | null;
    }>(
      `SELECT attempt, generation, at, status, latency_ms, response, error
       FROM ${d.table('delivery_attempts')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}
       ORDER BY generation`,
      [parts.eventId, parts.key],
    );
    return {
      delivery: view(row),
      attempts: log.rows.map((a) => ({
        attempt: Number(a.attempt),
        generation: Number(a.generation),
        at: Number(a.at),
        status: a.status === null ? null : Number(a.status),
        latencyMs: Number(a.latency_ms),
        response: a.response,
        error: a.error,
      })),
    };
  });
}

/** Per endpoint: deliveries by state, attempts logged, and whether a 410 disabled it. */
export interface EndpointCounts {
  readonly endpoint: string;
  readonly states: Record<DeliveryState, number>;
  readonly attempts: number;
  readonly disabled: { readonly at: number; readonly reason: string } | null;
}

/** {@link EndpointCounts} of every endpoint that has deliveries or is disabled, by name. */
export async function deliveryCounts(store: Store): Promise<EndpointCounts[]> {
  return store.read(async (x) => {
    const d = x.dialect;
    const { rows } = await x.query<{ endpoint: string; state: DeliveryState; n: number }>(
      `SELECT endpoint, state, count(*) AS n FROM ${d.table('deliveries')} GROUP BY endpoint, state`,
    );
    const tried = await x.query<{ endpoint: string; n: number }>(
      `SELECT dl.endpoint, count(*) AS n FROM ${d.table('delivery_attempts')} a
       JOIN ${d.table('deliveries')} dl ON dl.event_id = a.event_id AND dl.key = a.key
       GROUP BY dl.endpoint`,
    );
    const disabled = await disabledEndpoints(x);
    const byName = new Map<string, { states: Record<DeliveryState, number>; attempts: number }>();
    const entry = (name: string) => {
      let found = byName.get(name);
      if (found === undefined) {
        found = { states: { pending: 0, leased: 0, delivered: 0, dead: 0 }, attempts: 0 };
        byName.set(name, found);
      }
      return found;
    };
    for (const r of rows) entry(r.endpoint).states[r.state] = Number(r.n);
    for (const r of tried.rows) entry(r.endpoint).attempts = Number(r.n);
    for (const r of disabled) entry(r.endpoint);
    return [...byName.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([endpoint, counts]) => {
        const off = disabled.find((r) => r.endpoint === endpoint);
        return {
          endpoint,
          ...counts,
          disabled: off === undefined ? null : { at: off.disabledAt, reason: off.reason },
        };
      });
  });
}

/**
 * Returns dead deliveries to pending for a new cycle (attempts 0, due now), under the
 * same webhook id. Named ids must all be dead, else nothing changes and the first that is
 * not (or does not exist) is refused. Returns the webhook ids redriven.
 */
export async function redriveDeliveries(
  store: Store,
  selection: readonly string[] | { all: true; endpoint?: string },
): Promise<string[]> {
  return store.transact(async (x) => {
    const d = x.dialect;
    const now = store.clock();
    const set = `state = 'pending', attempts = 0, available_at = ${d.now(1)}, finished_at = NULL`;
    if (!Array.isArray(selection)) {
      const endpoint = (selection as { endpoint?: string }).endpoint;
      const { rows } = await x.query<{ event_id: string; key: string }>(
        `UPDATE ${d.table('deliveries')} SET ${set}
         WHERE state = 'dead'${endpoint === undefined ? '' : ` AND endpoint = ${d.param(2)}`}
         RETURNING event_id, key`,
        endpoint === undefined ? [d.nowValue(now)] : [d.nowValue(now), endpoint],
      );
      return rows.map((r) => webhookId(r.event_id, r.key)).sort();
    }
    const ids = selection as readonly string[];
    for (const id of ids) {
      const parts = splitId(id);
      if (parts === null) throw new DeliveryNotFoundError(id);
      const { rows } = await x.query<{ state: string }>(
        `SELECT state FROM ${d.table('deliveries')} WHERE event_id = ${d.param(1)} AND key = ${d.param(2)}${d.rowLocks ? ' FOR UPDATE' : ''}`,
        [parts.eventId, parts.key],
      );
      const row = rows[0];
      if (row === undefined) throw new DeliveryNotFoundError(id);
      if (row.state !== 'dead') throw new DeliveryNotDeadError(id, row.state);
    }
    for (const id of ids) {
      const parts = splitId(id) as { eventId: string; key: string };
      await x.query(
        `UPDATE ${d.table('deliveries')} SET ${set} WHERE event_id = ${d.param(2)} AND key = ${d.param(3)}`,
        [d.nowValue(now), parts.eventId, parts.key],
      );
    }
    return [...ids];
  });
}

/** Enables an endpoint a 410 disabled; its waiting deliveries are sent again. True if it was disabled. */
export async function enableEndpoint(store: Store, endpoint: string): Promise<boolean> {
  return store.transact(async (x) => {
    const { changes } = await x.query(
      `DELETE FROM ${x.dialect.table('disabled_endpoints')} WHERE endpoint = ${x.dialect.param(1)}`,
      [endpoint],
    );
    return changes > 0;
  });
}
