import type { Store } from '../driver/backend.ts';
import type { MessageFilter } from '../driver/sql/inspect.ts';
import { OnceqError } from '../errors.ts';
import type { MessageView } from '../types.ts';
import { toView } from './inspect.ts';

/** How a listing is ordered: by event id, or by the time of the last change. */
export const LIST_ORDERS = ['id', 'oldest', 'newest'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];

/** The largest page {@link listMessages} returns. */
export const MAX_PAGE = 500;

export type { MessageFilter };

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
  const cursor = options.after;
  const after =
    cursor === undefined ? undefined : order === 'id' ? { id: cursor } : parseTimeCursor(cursor);
  const rows = await store.read((x) =>
    store.driver.listPage(x, { filter: options, order, limit: limit + 1, after }),
  );
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
  return store.read((x) => store.driver.countMatching(x, filter));
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
