/**
 * The outbox as operators see it and change it: the list (`onceq deliveries`), one
 * delivery with its attempt log, counts per endpoint and state (metrics), redrive of dead
 * deliveries, and re-enabling an endpoint a 410 disabled.
 */
import type { Store } from '../driver/backend.ts';
import {
  countDeliveries,
  type DeliveryRow,
  disabledEndpoints,
  enableDisabledEndpoint,
  lockDeliveryState,
  redriveDead,
  selectDeliveries,
  selectDelivery,
} from '../driver/sql/deliveries.ts';
import { OnceqError } from '../errors.ts';
import { webhookId } from './endpoint.ts';

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

function view(r: DeliveryRow): DeliveryView {
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
  const rows = await store.read((x) =>
    selectDeliveries(x, {
      ...(options.state === undefined ? {} : { state: options.state }),
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      limit: options.limit ?? 1000,
    }),
  );
  return rows.map(view);
}

/** One delivery by its webhook id, with every attempt logged for it (oldest first). */
export async function showDelivery(
  store: Store,
  id: string,
): Promise<{ delivery: DeliveryView; attempts: AttemptView[] }> {
  const parts = splitId(id);
  if (parts === null) throw new DeliveryNotFoundError(id);
  const found = await store.read((x) => selectDelivery(x, parts.eventId, parts.key));
  if (found === null) throw new DeliveryNotFoundError(id);
  return {
    delivery: view(found.row),
    attempts: found.attempts.map((a) => ({
      attempt: Number(a.attempt),
      generation: Number(a.generation),
      at: Number(a.at),
      status: a.status === null ? null : Number(a.status),
      latencyMs: Number(a.latency_ms),
      response: a.response,
      error: a.error,
    })),
  };
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
    const { states, attempts } = await countDeliveries(x);
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
    for (const r of states) entry(r.endpoint).states[r.state] = Number(r.n);
    for (const r of attempts) entry(r.endpoint).attempts = Number(r.n);
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
    const now = store.clock();
    if (!Array.isArray(selection)) {
      const endpoint = (selection as { endpoint?: string }).endpoint;
      const moved = await redriveDead(x, now, endpoint === undefined ? {} : { endpoint });
      return moved.map((r) => webhookId(r.event_id, r.key)).sort();
    }
    const ids = selection as readonly string[];
    const named: { eventId: string; key: string }[] = [];
    for (const id of ids) {
      const parts = splitId(id);
      if (parts === null) throw new DeliveryNotFoundError(id);
      const state = await lockDeliveryState(x, parts.eventId, parts.key);
      if (state === null) throw new DeliveryNotFoundError(id);
      if (state !== 'dead') throw new DeliveryNotDeadError(id, state);
      named.push(parts);
    }
    for (const parts of named) await redriveDead(x, now, parts);
    return [...ids];
  });
}

/** Enables an endpoint a 410 disabled; its waiting deliveries are sent again. True if it was disabled. */
export async function enableEndpoint(store: Store, endpoint: string): Promise<boolean> {
  return store.transact((x) => enableDisabledEndpoint(x, endpoint));
}
