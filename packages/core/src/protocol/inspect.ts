import type { Store } from '../backend/backend.ts';
import { NotFoundError } from '../errors.ts';
import { parseJson } from '../json/parse.ts';
import type { JsonObject } from '../json/value.ts';
import { stateLiteral } from '../transitions.ts';
import type { MessageView, StatusReport } from '../types.ts';
import { queueSnapshot } from './snapshot.ts';

/**
 * Counts by state, number of effects, money totals by category, read in **one
 * statement** (one snapshot: `done` and `effects` always agree; see
 * {@link queueSnapshot}). Reads stored values only: an expired lease still counts as
 * `leased` until the next claim recovers it.
 */
export async function status(store: Store): Promise<StatusReport> {
  return (await queueSnapshot(store)).report;
}

const MESSAGE_COLUMNS = [
  'messages.event_id',
  'messages.payload',
  'messages.state',
  'messages.attempts',
  'messages.generation',
  'messages.available_at',
  'messages.lease_until',
  'messages.last_error_code',
  'messages.last_error_detail',
  'messages.enqueued_at',
  'messages.updated_at',
  'effects.category',
  'effects.amount_cents',
] as const;

export function baseQuery(store: Store) {
  return store.db
    .selectFrom('messages')
    .leftJoin('effects', 'effects.event_id', 'messages.event_id')
    .select(MESSAGE_COLUMNS);
}

type Row = Awaited<ReturnType<ReturnType<typeof baseQuery>['executeTakeFirstOrThrow']>>;

export function toView(row: Row): MessageView {
  return {
    eventId: row.event_id,
    payload: parseJson(row.payload) as JsonObject,
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
  };
}

/** One message in full, with its effect if any. Throws {@link NotFoundError}. */
export async function show(store: Store, eventId: string): Promise<MessageView> {
  const row = await baseQuery(store).where('messages.event_id', '=', eventId).executeTakeFirst();
  if (row === undefined) throw new NotFoundError(eventId);
  return toView(row);
}

/** The dead-letter queue: every `dead` message with its original payload, by event id. */
export async function dlq(store: Store): Promise<MessageView[]> {
  const rows = await baseQuery(store)
    .where('messages.state', '=', stateLiteral('dead'))
    .orderBy('messages.event_id')
    .execute();
  return rows.map(toView);
}
