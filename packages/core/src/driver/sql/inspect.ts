/**
 * The read-only views of `queue/`: one message with its effect, the dead-letter queue,
 * the listings with their filters and cursors, what is due next, and
 * the rows a redrive preview judges. A listing's filters are ANDed terms, its text
 * kept per shape.
 */
import type { CompletionsTable, EffectsTable, MessagesTable } from '../../schema.ts';
import { MESSAGE_STATES, type MessageState } from '../../states.ts';
import type { Executor } from '../executor.ts';
import { type SqlDialect, type SqlText, sqlText, statement, statementFor } from '../sql-text.ts';
import { bySelection } from './dead-selection.ts';
import { overReadyQueues, readyQueues } from './ready.ts';

/**
 * One message row joined with its recorded outcome (an effect or a completion; null when
 * it has none), as the views read it.
 */
export type MessageRow = MessagesTable & {
  category: EffectsTable['category'] | null;
  amount_cents: EffectsTable['amount_cents'] | null;
  completion_id: CompletionsTable['event_id'] | null;
  completion_summary: CompletionsTable['summary'] | null;
  ordering_key: string | null;
  queue: string;
};

const MESSAGE_COLUMNS = `messages.event_id, messages.payload, messages.state, messages.attempts, messages.generation,
  messages.available_at, messages.lease_until, messages.last_error_code, messages.last_error_detail, messages.enqueued_at,
  messages.updated_at, messages.pruned_at, messages.payload_sha256, effects.category, effects.amount_cents,
  completions.event_id AS completion_id, completions.summary AS completion_summary,
  messages.ordering_key, messages.queue`;

/** Every message joined with its recorded outcome. */
function messagesWithOutcome(d: SqlDialect): string {
  return `SELECT ${MESSAGE_COLUMNS} FROM ${d.table('messages')}
  LEFT JOIN ${d.table('effects')} ON effects.event_id = messages.event_id
  LEFT JOIN ${d.table('completions')} ON completions.event_id = messages.event_id`;
}

/** The message ?1, with its outcome. */
export const messageById = statement(
  'message-by-id',
  (d) => `${messagesWithOutcome(d)} WHERE messages.event_id = ${d.param(1)}`,
);

/**
 * Every dead message not pruned, by event id, of every queue or (`ofQueue`) of the queue
 * ?1; the first `n` of them when `n > 0`.
 */
function deadMessagesText(ofQueue: boolean) {
  return statementFor(
    ofQueue ? 'dlq-queue' : 'dlq',
    (d, n) =>
      `${messagesWithOutcome(d)} WHERE messages.state = 'dead' AND messages.pruned_at IS NULL${ofQueue ? ` AND messages.queue = ${d.param(1)}` : ''} ORDER BY messages.event_id${n > 0 ? ` LIMIT ${n}` : ''}`,
  );
}
const deadTexts = { all: deadMessagesText(false), queue: deadMessagesText(true) };

/** The dead messages not pruned (of `queue` when given), by event id; `limit` 0 or none: all. */
export async function listDead(x: Executor, limit?: number, queue?: string): Promise<MessageRow[]> {
  // A limit of 0 reads nothing; no limit (arity 0) reads every dead message.
  if (limit === 0) return [];
  const text = (queue === undefined ? deadTexts.all : deadTexts.queue)(x.dialect, limit ?? 0);
  return (await x.query<MessageRow>(text, queue === undefined ? [] : [queue])).rows;
}

/** How many messages {@link listDead} returns without a limit. */
export async function countDead(x: Executor, queue?: string): Promise<number> {
  return countMatching(x, {
    state: 'dead',
    pruned: false,
    ...(queue === undefined ? {} : { queue }),
  });
}

/** Which messages a listing (or a count) takes. Every field narrows; none means all. */
export interface MessageFilter {
  state?: MessageState;
  /** Only messages of this queue. */
  queue?: string;
  /** `false`: only messages whose payload is kept; `true`: only pruned ones. */
  pruned?: boolean;
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

/**
 * A listing's statement and its parameters: the filters `filter` sets, ANDed, each
 * value bound once, then the cursor and the order of `page` (absent for a count). The
 * text depends only on which filters are set (the state, the prefix with its length), the order
 * and the cursor, so it is kept per shape; a short shape key, since PostgreSQL cuts a
 * prepared statement's name at 63 bytes and two shapes must never share one.
 */
function listing(
  d: SqlDialect,
  filter: MessageFilter,
  page: ListPage | undefined,
): { text: SqlText; values: unknown[] } {
  const values: unknown[] = [];
  const terms: string[] = [];
  let key = '';
  const bind = (value: unknown) => {
    values.push(value);
    return d.param(values.length);
  };
  if (filter.state !== undefined) {
    // A literal, so the planner matches it against the partial indexes by state.
    const state = MESSAGE_STATES.indexOf(filter.state);
    if (state < 0) throw new TypeError(`no message state ${JSON.stringify(filter.state)}`);
    terms.push(`messages.state = '${MESSAGE_STATES[state]}'`);
    // A waiting message is in no index by state, and always has a key: the key's index
    // (partial on `ordering_key IS NOT NULL`) holds it.
    if (filter.state === 'waiting') terms.push('messages.ordering_key IS NOT NULL');
    key += `s${state}`;
  }
  if (filter.errorCode !== undefined) {
    terms.push(`messages.last_error_code = ${bind(filter.errorCode)}`);
    key += 'e';
  }
  if (filter.queue !== undefined) {
    terms.push(`messages.queue = ${bind(filter.queue)}`);
    key += 'q';
  }
  if (filter.pruned !== undefined) {
    terms.push(`messages.pruned_at IS ${filter.pruned ? 'NOT ' : ''}NULL`);
    key += filter.pruned ? 'P' : 'K';
  }
  const prefix = filter.idPrefix ?? '';
  if (prefix !== '') {
    // The prefix's length is part of the SQL: `substr` keeps the comparison exact.
    terms.push(`substr(messages.event_id, 1, ${prefix.length}) = ${bind(prefix)}`);
    key += `p${prefix.length}`;
  }
  if (filter.updatedAtOrBefore !== undefined) {
    terms.push(`messages.updated_at <= ${bind(filter.updatedAtOrBefore)}`);
    key += 'b';
  }
  if (filter.updatedAtOrAfter !== undefined) {
    terms.push(`messages.updated_at >= ${bind(filter.updatedAtOrAfter)}`);
    key += 'a';
  }
  let order = '';
  if (page !== undefined) {
    const { after } = page;
    if (page.order === 'id') {
      if (after !== undefined) terms.push(`messages.event_id > ${bind(after.id)}`);
      order = ' ORDER BY messages.event_id';
    } else {
      const cmp = page.order === 'oldest' ? '>' : '<';
      if (after !== undefined) {
        const at = bind(after.at);
        terms.push(
          `(messages.updated_at ${cmp} ${at} OR (messages.updated_at = ${at} AND messages.event_id ${cmp} ${bind(after.id)}))`,
        );
      }
      const direction = page.order === 'oldest' ? 'ASC' : 'DESC';
      order = ` ORDER BY messages.updated_at ${direction}, messages.event_id ${direction}`;
    }
    order += ` LIMIT ${page.limit}`;
    key += `-${page.order}${after === undefined ? '' : '-c'}`;
  }
  const where = terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`;
  const text =
    page === undefined
      ? countText(d, key, () => `SELECT count(*) AS n FROM ${d.table('messages')}${where}`)
      : pageText(d, page.limit, key, () => `${messagesWithOutcome(d)}${where}${order}`);
  return { text, values };
}

const countTexts = new Map<string, SqlText>();
const pageTexts = new Map<string, SqlText>();

function countText(d: SqlDialect, key: string, write: () => string): SqlText {
  return kept(countTexts, `${d.key} ${key}`, () => sqlText(`list-count-${key}`, 1, write()));
}

function pageText(d: SqlDialect, n: number, key: string, write: () => string): SqlText {
  return kept(pageTexts, `${d.key} ${n} ${key}`, () => sqlText(`list-${key}`, n, write()));
}

function kept(texts: Map<string, SqlText>, key: string, make: () => SqlText): SqlText {
  let text = texts.get(key);
  if (text === undefined) {
    text = make();
    texts.set(key, text);
  }
  return text;
}

/** One keyset page of the messages `page.filter` takes, in `page.order`. */
export async function listPage(x: Executor, page: ListPage): Promise<MessageRow[]> {
  const { text, values } = listing(x.dialect, page.filter, page);
  return (await x.query<MessageRow>(text, values)).rows;
}

/** How many messages `filter` takes. */
export async function countMatching(x: Executor, filter: MessageFilter): Promise<number> {
  const { text, values } = listing(x.dialect, filter, undefined);
  return Number((await x.query<{ n: unknown }>(text, values)).rows[0]?.n ?? 0);
}

/**
 * The earliest `available_at` of a ready message and `lease_until` of a leased one, and
 * the statement's now (?1) on the clock those times were written with.
 */
export const nextDueRow = statement(
  'next-due',
  (d) => `${readyQueues(d)}
  SELECT
    ${d.now(1)} AS now,
    ${overReadyQueues(d, 'min', 'min(m.available_at)')} AS ready_at,
    (SELECT min(lease_until) FROM ${d.table('messages')} WHERE state = 'leased') AS lease_at`,
);

/** What {@link waitingRow} reads; a column is null (or absent) where nothing counts. */
export interface WaitingRow {
  in_backoff?: unknown;
  next_ready?: unknown;
  leased?: unknown;
  next_expiry?: unknown;
}

/** Ready messages still in backoff at ?1, and leased ones, with their earliest times. */
export const waitingRow = statement('waiting', (d) => {
  const messages = d.table('messages');
  const now = d.param(1);
  return `${readyQueues(d)}
  SELECT
    coalesce(${overReadyQueues(d, 'sum', 'count(*)', `m.available_at > ${now}`)}, 0) AS in_backoff,
    ${overReadyQueues(d, 'min', 'min(m.available_at)', `m.available_at > ${now}`)} AS next_ready,
    (SELECT count(*) FROM ${messages} WHERE state = 'leased') AS leased,
    (SELECT min(lease_until) FROM ${messages} WHERE state = 'leased') AS next_expiry`;
});

/** A message as a redrive preview judges it. */
export interface PreviewRow {
  event_id: string;
  payload: string | null;
  state: MessageState;
  generation: number;
}

/**
 * The named messages (any state: the preview refuses one not dead), or every dead one
 * (of a queue), by event id.
 */
export const previewText = bySelection(
  'redrive-preview',
  1,
  (d, term) =>
    `SELECT event_id, payload, state, generation FROM ${d.table('messages')} WHERE ${term ?? "state = 'dead'"} ORDER BY event_id`,
);
