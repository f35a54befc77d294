import type { Store } from '../driver/backend.ts';
import { type FilterShape, listCount, listPage } from '../driver/sql/inspect.ts';
import { OnceqError } from '../errors.ts';
import type { MessageState } from '../states.ts';
import type { MessageView } from '../types.ts';
import { toView } from './inspect.ts';

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

/** Which filters `filter` sets, and their values as the listing statements' slots. */
function filterOf(filter: MessageFilter): { shape: FilterShape; values: Record<string, unknown> } {
  const prefix = filter.idPrefix ?? '';
  const shape: FilterShape = {
    state: filter.state !== undefined,
    errorCode: filter.errorCode !== undefined,
    idPrefixLength: prefix.length,
    updatedAtOrBefore: filter.updatedAtOrBefore !== undefined,
    updatedAtOrAfter: filter.updatedAtOrAfter !== undefined,
  };
  const values: Record<string, unknown> = {};
  if (filter.state !== undefined) values.state = filter.state;
  if (filter.errorCode !== undefined) values.errorCode = filter.errorCode;
  if (prefix !== '') values.idPrefix = prefix;
  if (filter.updatedAtOrBefore !== undefined) values.updatedAtOrBefore = filter.updatedAtOrBefore;
  if (filter.updatedAtOrAfter !== undefined) values.updatedAtOrAfter = filter.updatedAtOrAfter;
  return { shape, values };
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
  const { shape, values } = filterOf(options);
  const cursor = options.after;
  if (cursor !== undefined) {
    if (order === 'id') values.afterId = cursor;
    else {
      const at = parseTimeCursor(cursor);
      values.afterAt = at.at;
      values.afterId = at.id;
    }
  }
  const statement = listPage({ ...shape, order, cursor: cursor !== undefined });
  const rows = await store.read((x) => x.rows(statement, values, limit + 1));
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
  const { shape, values } = filterOf(filter);
  const [row] = await store.read((x) => x.rows(listCount(shape), values));
  return Number(row?.n ?? 0);
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
