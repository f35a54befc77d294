import type { Store } from '../driver/backend.ts';
import type { MessageRow } from '../driver/sql/inspect.ts';
import { NotFoundError } from '../errors.ts';
import type { JsonObject } from '../input/json-value.ts';
import { parseJson } from '../input/parse-json.ts';
import type { MessageView, StatusReport } from '../types.ts';
import { queueSnapshot } from './snapshot.ts';

/**
 * Counts by state, number of effects, money totals by category, read in **one
 * statement** (one snapshot: `done` and `effects` always agree; see
 * {@link queueSnapshot}). Reads stored values only: an expired lease still counts as
 * `leased` until the next claim recovers it. With `queue`: the figures of that queue
 * alone (its messages and their effects), counted from its messages, so that costs more on
 * a large store.
 */
export async function status(
  store: Store,
  options: { queue?: string } = {},
): Promise<StatusReport> {
  return (await queueSnapshot(store, options)).report;
}

export function toView(row: MessageRow): MessageView {
  return {
    eventId: row.event_id,
    payload: row.payload === null ? null : (parseJson(row.payload) as JsonObject),
    payloadText: row.payload,
    state: row.state,
    attempts: Number(row.attempts),
    generation: Number(row.generation),
    availableAt: Number(row.available_at),
    leaseUntil: row.lease_until === null ? null : Number(row.lease_until),
    lastErrorCode: row.last_error_code,
    lastErrorDetail: row.last_error_detail,
    enqueuedAt: Number(row.enqueued_at),
    updatedAt: Number(row.updated_at),
    effect:
      row.category === null
        ? null
        : { category: row.category, amountCents: Number(row.amount_cents) },
    completion: row.completion_id === null ? null : { summary: row.completion_summary },
    prunedAt: row.pruned_at === null ? null : Number(row.pruned_at),
    payloadSha256: row.payload_sha256,
    key: row.ordering_key,
    queue: row.queue,
  };
}

/** One message in full, with its effect if any. Throws {@link NotFoundError}. */
export async function show(store: Store, eventId: string): Promise<MessageView> {
  const row = await store.read((x) => store.driver.readMessage(x, eventId));
  if (row === undefined) throw new NotFoundError(eventId);
  return toView(row);
}

/**
 * The dead-letter queue: the `dead` messages with their original payloads, by event id,
 * all of them or the first `limit`. A pruned dead message (`onceq prune
 * --dead-older-than`) has no payload left to decide on or redrive: it leaves the DLQ,
 * while `status` still counts it as dead.
 */
export async function dlq(store: Store, options: DlqOptions = {}): Promise<MessageView[]> {
  const { limit, queue } = options;
  const rows = await store.read((x) => store.driver.listDead(x, limit, queue));
  return rows.map(toView);
}

/** Which dead messages {@link dlq} lists. */
export interface DlqOptions {
  /** At most this many, by event id. Default: all. */
  limit?: number;
  /** Only the dead messages of this queue. Default: every queue. */
  queue?: string;
}

/** How many messages {@link dlq} holds (of `queue` when given): the dead ones not pruned. */
export async function countDlq(store: Store, options: { queue?: string } = {}): Promise<number> {
  return store.read((x) => store.driver.countDead(x, options.queue));
}
