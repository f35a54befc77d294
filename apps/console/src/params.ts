/**
 * Query parameters of the list pages, checked strictly: an unknown name or a bad value
 * is a 400 that names the parameter, never a silently ignored filter.
 */
import type { MessageState } from '@onceq/core';
import {
  isMessageState,
  LIST_ORDERS,
  type ListOrder,
  MAX_PAGE,
  MESSAGE_STATES,
  type MessageFilter,
} from '@onceq/core/admin';
import { isQueueName, QUEUE_NAME_RULE } from '@onceq/core/internal';
import { badParam, ConsoleRequestError } from './errors.ts';

/** The list filter as the form shows it (text as typed) and as core takes it. */
export interface ListQuery {
  state: MessageState | null;
  /** One queue's messages; empty for every queue. */
  queue: string;
  code: string;
  prefix: string;
  /** As typed: `10m`, `2h`, `3d`; empty for none. */
  older: string;
  newer: string;
  order: ListOrder;
  limit: number;
  after: string | null;
}

/** Page size of the lists when none is asked for. */
export const DEFAULT_LIMIT = 50;

const AGE = /^([0-9]{1,6})(s|m|h|d)$/;
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const TEXT = /^[\x21-\x7e]{0,100}$/;

/** `10m` → 600 seconds. */
export function parseAge(field: string, text: string): number {
  const match = AGE.exec(text);
  if (match === null) {
    throw badParam(
      field,
      `${field} must be a number with a unit s, m, h or d (e.g. 10m), not ${JSON.stringify(text)}`,
    );
  }
  return Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
}

/** Refuses any parameter not in `allowed`, and any given twice (except those in `repeatable`). */
export function expectParams(
  params: URLSearchParams,
  allowed: readonly string[],
  repeatable: readonly string[] = [],
): void {
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!allowed.includes(name)) {
      throw badParam(
        name,
        `unknown parameter ${JSON.stringify(name)} (known: ${allowed.join(', ')})`,
      );
    }
    if (seen.has(name) && !repeatable.includes(name)) {
      throw badParam(name, `the parameter ${JSON.stringify(name)} is given twice`);
    }
    seen.add(name);
  }
}

export const LIST_PARAMS = [
  'state',
  'queue',
  'code',
  'prefix',
  'older',
  'newer',
  'order',
  'limit',
  'after',
];

function text(params: URLSearchParams, name: string): string {
  const value = (params.get(name) ?? '').trim();
  if (!TEXT.test(value)) {
    throw badParam(name, `${name} must be up to 100 printable characters without spaces`);
  }
  return value;
}

/** Reads the list parameters; `fixedState` (the DLQ) ignores none but refuses another state. */
export function parseListQuery(params: URLSearchParams, fixedState?: MessageState): ListQuery {
  const stateText = params.get('state') ?? '';
  let state: MessageState | null = null;
  if (stateText !== '') {
    if (!isMessageState(stateText)) {
      throw badParam(
        'state',
        `state must be one of ${MESSAGE_STATES.join(', ')}, not ${JSON.stringify(stateText)}`,
      );
    }
    state = stateText;
  }
  if (fixedState !== undefined) {
    if (state !== null && state !== fixedState) {
      throw badParam('state', `this page lists ${fixedState} messages only`);
    }
    state = fixedState;
  }
  const queue = (params.get('queue') ?? '').trim();
  if (queue !== '' && !isQueueName(queue)) {
    throw badParam('queue', `queue must be ${QUEUE_NAME_RULE}, not ${JSON.stringify(queue)}`);
  }
  const older = text(params, 'older');
  const newer = text(params, 'newer');
  if (older !== '') parseAge('older', older);
  if (newer !== '') parseAge('newer', newer);
  const orderText = params.get('order') ?? 'id';
  if (!(LIST_ORDERS as readonly string[]).includes(orderText)) {
    throw badParam(
      'order',
      `order must be one of ${LIST_ORDERS.join(', ')}, not ${JSON.stringify(orderText)}`,
    );
  }
  const limitText = params.get('limit') ?? String(DEFAULT_LIMIT);
  const limit = Number(limitText);
  if (!/^[0-9]{1,4}$/.test(limitText) || limit < 1 || limit > MAX_PAGE) {
    throw badParam(
      'limit',
      `limit must be a whole number from 1 to ${MAX_PAGE}, not ${JSON.stringify(limitText)}`,
    );
  }
  const after = params.get('after');
  if (after !== null && (after === '' || after.length > 200)) {
    throw badParam('after', 'after must be the cursor of a previous page');
  }
  return {
    state,
    queue,
    code: text(params, 'code'),
    prefix: text(params, 'prefix'),
    older,
    newer,
    order: orderText as ListOrder,
    limit,
    after,
  };
}

/** The core filter of a query, ages turned into times before `now` (Unix seconds). */
export function toFilter(query: ListQuery, now: number): MessageFilter {
  const filter: MessageFilter = {};
  if (query.state !== null) filter.state = query.state;
  if (query.queue !== '') filter.queue = query.queue;
  if (query.code !== '') filter.errorCode = query.code;
  if (query.prefix !== '') filter.idPrefix = query.prefix;
  if (query.older !== '') filter.updatedAtOrBefore = now - parseAge('older', query.older);
  if (query.newer !== '') filter.updatedAtOrAfter = now - parseAge('newer', query.newer);
  return filter;
}

/** The query string of `query` with `changes` applied (for pagination and sort links). */
export function listHref(
  path: string,
  query: ListQuery,
  changes: Partial<ListQuery> = {},
  omitState = false,
): string {
  const q = { ...query, ...changes };
  const params = new URLSearchParams();
  if (q.state !== null && !omitState) params.set('state', q.state);
  if (q.queue !== '') params.set('queue', q.queue);
  if (q.code !== '') params.set('code', q.code);
  if (q.prefix !== '') params.set('prefix', q.prefix);
  if (q.older !== '') params.set('older', q.older);
  if (q.newer !== '') params.set('newer', q.newer);
  if (q.order !== 'id') params.set('order', q.order);
  if (q.limit !== DEFAULT_LIMIT) params.set('limit', String(q.limit));
  if (q.after !== null) params.set('after', q.after);
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * The text fields of the form a POST carries; a JSON or text body, or a form that does
 * not parse, is a 400.
 */
export async function readForm(req: Request): Promise<URLSearchParams> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const refused = new ConsoleRequestError(
    400,
    'bad_body',
    'this address takes a form (application/x-www-form-urlencoded), not the body that was sent',
  );
  if (!FORM_TYPES.has(type)) throw refused;
  let form: Awaited<ReturnType<Request['formData']>>;
  try {
    form = await req.formData();
  } catch {
    throw refused;
  }
  const fields = new URLSearchParams();
  form.forEach((value, name) => {
    if (typeof value === 'string') fields.append(name, value);
  });
  return fields;
}
