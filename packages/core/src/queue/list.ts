import { type ExpressionBuilder, sql } from 'kysely';
import type { Store } from '../driver/backend.ts';
import { OnceqError } from '../errors.ts';
import type { Database } from '../schema.ts';
import type { MessageState } from '../states.ts';
import type { MessageView } from '../types.ts';
import { baseQuery, toView } from './inspect.ts';

/** How a listing is ordered: by event id, or by the time of the last change. */
export const LIST_ORDERS = ['id', 'oldest', 'newest'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];

/** The largest page {@link listMessages} returns. */
export const MAX_PAGE = 500;

/** Which messages a listing (or a count) takes. Every field narrows; none means all. */
export interface MessageFilter {
  state?: MessageState;
  /** Exact `last_error_code`. */
  errorCode?: string;
  /** Event ids that start with this text (case-sensitive). */
  idPrefix?: string;
  /** Only messages last changed at or before this time (Unix seconds): "older than". */
  updatedAtOrBefore?: number;
  /** Only messages last changed at or after this time (Unix seconds): "newer than". */
  updatedAtOrAfter?: number;
}

export interface ListOptions extends MessageFilter {
  /** Default `id`. */
  order?: ListOrder;
  /** Page size, 1 to {@link MAX_PAGE}. Default 50. */
  limit?: number;
  /** The `next` cursor of the previous page; for order `id` an event id works too. */
  after?: string;
}

export interface MessagePage {
  messages: MessageView[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

/** A listing argument that cannot work (bad limit, malformed cursor). Exit code 2. */
export class ListArgumentError extends OnceqError {
  constructor(message: string) {
    super('bad_list_argument', 2, message);
  }
}

function where(filter: MessageFilter) {
  return (eb: ExpressionBuilder<Database, 'messages'>) => {
    const terms = [];
    if (filter.state !== undefined) terms.push(eb('messages.state', '=', filter.state));
    if (filter.errorCode !== undefined)
      terms.push(eb('messages.last_error_code', '=', filter.errorCode));
    if (filter.idPrefix !== undefined && filter.idPrefix !== '') {
      terms.push(
        eb(
          sql<string>`substr(messages.event_id, 1, ${filter.idPrefix.length})`,
          '=',
          filter.idPrefix,
        ),
      );
    }
    if (filter.updatedAtOrBefore !== undefined)
      terms.push(eb('messages.updated_at', '<=', filter.updatedAtOrBefore));
    if (filter.updatedAtOrAfter !== undefined)
      terms.push(eb('messages.updated_at', '>=', filter.updatedAtOrAfter));
    return eb.and(terms);
  };
}

/**
 * One page of messages matching `options`, with keyset pagination: a page is the same
 * whatever was inserted before the cursor, and deep pages cost no more than the first.
 * Read only; like `status`, it shows stored values (an expired lease is still `leased`).
 */
export async function listMessages(store: Store, options: ListOptions = {}): Promise<MessagePage> {
  const order = options.order ?? 'id';
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ListArgumentError(`the page size must be a whole number from 1 to ${MAX_PAGE}`);
  }
  let query = baseQuery(store).where(where(options));
  if (order === 'id') {
    if (options.after !== undefined) query = query.where('messages.event_id', '>', options.after);
    query = query.orderBy('messages.event_id');
  } else {
    if (options.after !== undefined) {
      const cursor = parseTimeCursor(options.after);
      const cmp = order === 'oldest' ? '>' : '<';
      query = query.where((eb) =>
        eb.or([
          eb('messages.updated_at', cmp, cursor.at),
          eb.and([
            eb('messages.updated_at', '=', cursor.at),
            eb('messages.event_id', cmp, cursor.id),
          ]),
        ]),
      );
    }
    const direction = order === 'oldest' ? 'asc' : 'desc';
    query = query.orderBy('messages.updated_at', direction).orderBy('messages.event_id', direction);
  }
  const rows = await query.limit(limit + 1).execute();
  const messages = rows.slice(0, limit).map(toView);
  const last = messages[messages.length - 1];
  const next =
    rows.length > limit && last !== undefined
      ? order === 'id'
        ? last.eventId
        : `${last.updatedAt}:${last.eventId}`
      : null;
  return { messages, next };
}

/** How many messages match `filter` (for "all matching this filter"). */
export async function countMessages(store: Store, filter: MessageFilter = {}): Promise<number> {
  const row = await store.db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(where(filter))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function parseTimeCursor(cursor: string): { at: number; id: string } {
  const colon = cursor.indexOf(':');
  const at = Number(cursor.slice(0, colon));
  if (colon <= 0 || !Number.isSafeInteger(at) || colon === cursor.length - 1) {
    throw new ListArgumentError(
      `the cursor ${JSON.stringify(cursor)} is not one a previous page returned`,
    );
  }
  return { at, id: cursor.slice(colon + 1) };
}
