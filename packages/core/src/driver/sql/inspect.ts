/**
 * The read-only views of `queue/`: one message with its effect, the dead-letter queue,
 * the listings with their filters and cursors, what is due next, the queue's ages, and
 * the rows a redrive preview judges. Built with Kysely once per shape (a listing's
 * filters are a builder's job), run through an executor.
 */
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import type { CompletionsTable, Database, EffectsTable, MessagesTable } from '../../schema.ts';
import type { MessageState } from '../../states.ts';
import { defineStatement, type Slots, type Statement } from '../prepared.ts';
import { stateLiteral, statementNow } from '../shared-statements.ts';

/**
 * One message row joined with its recorded outcome (an effect or a completion; null when
 * it has none), as the views read it.
 */
export type MessageRow = MessagesTable & {
  category: EffectsTable['category'] | null;
  amount_cents: EffectsTable['amount_cents'] | null;
  completion_id: CompletionsTable['event_id'] | null;
  completion_summary: CompletionsTable['summary'] | null;
};

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
  'messages.pruned_at',
  'messages.payload_sha256',
  'effects.category',
  'effects.amount_cents',
  'completions.event_id as completion_id',
  'completions.summary as completion_summary',
] as const;

function messages(db: Kysely<Database>) {
  return db
    .selectFrom('messages')
    .leftJoin('effects', 'effects.event_id', 'messages.event_id')
    .leftJoin('completions', 'completions.event_id', 'messages.event_id')
    .select(MESSAGE_COLUMNS);
}

/** The message `id`, with its effect. */
export const messageById = defineStatement<MessageRow>('message-by-id', ({ db, p }) =>
  messages(db).where('messages.event_id', '=', p.value<string>('id')),
);

function deadMessages(db: Kysely<Database>) {
  return messages(db)
    .where('messages.state', '=', stateLiteral('dead'))
    .where('messages.pruned_at', 'is', null)
    .orderBy('messages.event_id');
}

/** Every dead message not pruned, by event id. */
export const deadAll = defineStatement<MessageRow>('dlq-all', ({ db }) => deadMessages(db));

/** The first `n` of {@link deadAll}. */
export const deadFirst = defineStatement<MessageRow>('dlq-first', ({ db, n }) =>
  deadMessages(db).limit(n),
);

/** How many messages {@link deadAll} returns. */
export const deadCount = defineStatement<{ n: number }>('dlq-count', ({ db }) =>
  db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state', '=', stateLiteral('dead'))
    .where('pruned_at', 'is', null),
);

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

/** One page of a listing, as `Driver.listPage` reads it. */
export interface ListPage {
  filter: MessageFilter;
  order: 'id' | 'oldest' | 'newest';
  /** Continue after this row (`at`: its `updated_at`, for the time orders). */
  after?: { at?: number; id: string } | undefined;
  /** Rows to read. */
  limit: number;
}

/** Which filters a listing has (their values are the statement's slots). */
export interface FilterShape {
  state: boolean;
  errorCode: boolean;
  /** The prefix's length: it is part of the SQL (`substr(event_id, 1, n)`). */
  idPrefixLength: number;
  updatedAtOrBefore: boolean;
  updatedAtOrAfter: boolean;
}

function where(shape: FilterShape, p: Slots) {
  return (eb: ExpressionBuilder<Database, 'messages'>) => {
    const terms = [];
    if (shape.state) terms.push(eb('messages.state', '=', p.value<MessageState>('state')));
    if (shape.errorCode) {
      terms.push(eb('messages.last_error_code', '=', p.value<string>('errorCode')));
    }
    if (shape.idPrefixLength > 0) {
      terms.push(
        eb(
          sql<string>`substr(messages.event_id, 1, ${sql.lit(shape.idPrefixLength)})`,
          '=',
          p.value<string>('idPrefix'),
        ),
      );
    }
    if (shape.updatedAtOrBefore) {
      terms.push(eb('messages.updated_at', '<=', p.value<number>('updatedAtOrBefore')));
    }
    if (shape.updatedAtOrAfter) {
      terms.push(eb('messages.updated_at', '>=', p.value<number>('updatedAtOrAfter')));
    }
    return eb.and(terms);
  };
}

/** Which filters `filter` sets, and their values as the listing statements' slots. */
export function filterOf(filter: MessageFilter): {
  shape: FilterShape;
  values: Record<string, unknown>;
} {
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

/** A listing's order, and whether it continues after a cursor. */
export interface PageShape extends FilterShape {
  order: 'id' | 'oldest' | 'newest';
  /** Slots `afterId` (order `id`), or `afterAt` and `afterId` (by time). */
  cursor: boolean;
}

const cached = new Map<string, Statement<unknown>>();

/**
 * A shape as a short name: one letter per filter present (the prefix with its length),
 * then the order and `c` for a cursor. Short, since PostgreSQL cuts a prepared
 * statement's name at 63 bytes and two shapes must never share one.
 */
function shapeKey(shape: FilterShape & Partial<Pick<PageShape, 'order' | 'cursor'>>): string {
  return [
    shape.state ? 's' : '',
    shape.errorCode ? 'e' : '',
    shape.idPrefixLength > 0 ? `p${shape.idPrefixLength}` : '',
    shape.updatedAtOrBefore ? 'b' : '',
    shape.updatedAtOrAfter ? 'a' : '',
    shape.order === undefined ? '' : `-${shape.order}`,
    shape.cursor === true ? '-c' : '',
  ].join('');
}

function once<Row>(key: string, make: () => Statement<Row>): Statement<Row> {
  let statement = cached.get(key);
  if (statement === undefined) {
    statement = make() as Statement<unknown>;
    cached.set(key, statement);
  }
  return statement as Statement<Row>;
}

/** One page of a listing of `shape`: `n` rows, keyset-paged. */
export function listPage(shape: PageShape): Statement<MessageRow> {
  const key = `list-page-${shapeKey(shape)}`;
  return once(key, () =>
    defineStatement<MessageRow>(key, ({ db, p, n }) => {
      let query = messages(db).where(where(shape, p));
      if (shape.order === 'id') {
        if (shape.cursor) query = query.where('messages.event_id', '>', p.value<string>('afterId'));
        query = query.orderBy('messages.event_id');
      } else {
        const cmp = shape.order === 'oldest' ? '>' : '<';
        if (shape.cursor) {
          query = query.where((eb) =>
            eb.or([
              eb('messages.updated_at', cmp, p.value<number>('afterAt')),
              eb.and([
                eb('messages.updated_at', '=', p.value<number>('afterAt')),
                eb('messages.event_id', cmp, p.value<string>('afterId')),
              ]),
            ]),
          );
        }
        const direction = shape.order === 'oldest' ? 'asc' : 'desc';
        query = query
          .orderBy('messages.updated_at', direction)
          .orderBy('messages.event_id', direction);
      }
      return query.limit(n);
    }),
  );
}

/** How many messages a filter of `shape` matches. */
export function listCount(shape: FilterShape): Statement<{ n: number }> {
  const key = `list-count-${shapeKey(shape)}`;
  return once(key, () =>
    defineStatement<{ n: number }>(key, ({ db, p }) =>
      db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(where(shape, p)),
    ),
  );
}

/**
 * The earliest `available_at` of a ready message and `lease_until` of a leased one, and
 * the statement's now on the clock those times were written with.
 */
export const nextDueRow = defineStatement<{ ready_at: unknown; lease_at: unknown; now: unknown }>(
  'next-due',
  (context) => sql`SELECT
    ${statementNow(context)} AS now,
    (SELECT min(available_at) FROM messages WHERE state = ${stateLiteral('ready')}) AS ready_at,
    (SELECT min(lease_until) FROM messages WHERE state = ${stateLiteral('leased')}) AS lease_at`,
);

/** What {@link waitingRow} reads; a column is null (or absent) where nothing counts. */
export interface WaitingRow {
  in_backoff?: unknown;
  next_ready?: unknown;
  leased?: unknown;
  next_expiry?: unknown;
}

/** Ready messages still in backoff at `now`, and leased ones, with their earliest times. */
export const waitingRow = defineStatement<WaitingRow>('waiting', ({ p }) => {
  const ready = stateLiteral('ready');
  const leased = stateLiteral('leased');
  const now = p.value<number>('now');
  return sql`SELECT
    (SELECT count(*) FROM messages WHERE state = ${ready} AND available_at > ${now}) AS in_backoff,
    (SELECT min(available_at) FROM messages WHERE state = ${ready} AND available_at > ${now}) AS next_ready,
    (SELECT count(*) FROM messages WHERE state = ${leased}) AS leased,
    (SELECT min(lease_until) FROM messages WHERE state = ${leased}) AS next_expiry`;
});

/** The oldest `available_at` of a ready message and `updated_at` of a dead one. */
export const agesRow = defineStatement<{ ready_at: unknown; dead_at: unknown }>(
  'queue-ages',
  () => sql`SELECT
    (SELECT min(available_at) FROM messages WHERE state = ${stateLiteral('ready')}) AS ready_at,
    (SELECT min(updated_at) FROM messages WHERE state = ${stateLiteral('dead')}) AS dead_at`,
);

/** A message as a redrive preview judges it. */
export interface PreviewRow {
  event_id: string;
  payload: string | null;
  state: MessageState;
  generation: number;
}

/** Every dead message, by event id, for a preview of `redrive all`. */
export const previewAll = defineStatement<PreviewRow>('redrive-preview-all', ({ db }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'state', 'generation'])
    .where('state', '=', stateLiteral('dead'))
    .orderBy('event_id'),
);

/** The named messages (any state: the preview refuses one not dead), by event id. */
export const previewSome = defineStatement<PreviewRow>('redrive-preview', ({ db, p, n }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'state', 'generation'])
    .where('event_id', 'in', p.list<string>('ids', n))
    .orderBy('event_id'),
);
