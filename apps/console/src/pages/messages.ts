/**
 * The message list (`/messages`) and the dead-letter list (`/dlq`): server-side filters,
 * keyset pages from core's `listMessages`, the match count from `countMessages`. A bad
 * parameter answers 400 with the form and the message next to the field at fault.
 */
import type { Handler } from '@onceq/core';
import {
  countMessages,
  ListArgumentError,
  listMessages,
  type MessagePage,
} from '@onceq/core/admin';
import type { ConsoleState, Request0 } from '../context.ts';
import { ConsoleRequestError } from '../errors.ts';
import { type Html, html } from '../html.ts';
import { page } from '../layout.ts';
import {
  expectParams,
  LIST_PARAMS,
  type ListQuery,
  listHref,
  parseListQuery,
  toFilter,
} from '../params.ts';
import { type FieldError, filterForm, formValues, messageTable } from './list.ts';

type Kind = 'messages' | 'dlq';

export async function listPage(state: ConsoleState, r: Request0, kind: Kind): Promise<Response> {
  const path = kind === 'dlq' ? '/dlq' : '/messages';
  const title = kind === 'dlq' ? 'Dead letters' : 'Messages';
  const values = formValues(r.url.searchParams);
  let query: ListQuery;
  let pageData: MessagePage;
  let count: number;
  const now = state.store.clock();
  try {
    expectParams(r.url.searchParams, LIST_PARAMS);
    query = parseListQuery(r.url.searchParams, kind === 'dlq' ? 'dead' : undefined);
    const filter = toFilter(query, now);
    [pageData, count] = await Promise.all([
      listMessages(state.store, {
        ...filter,
        order: query.order,
        limit: query.limit,
        ...(query.after === null ? {} : { after: query.after }),
      }),
      countMessages(state.store, filter),
    ]);
  } catch (error) {
    const field = fieldOf(error);
    if (field === null) throw error;
    return page(
      state,
      r,
      kind,
      title,
      html`<h1>${title}</h1>${filterForm(path, values, field, kind === 'messages')}`,
      400,
    );
  }
  const filtered =
    query.queue !== '' ||
    query.code !== '' ||
    query.prefix !== '' ||
    query.older !== '' ||
    query.newer !== '' ||
    (kind === 'messages' && query.state !== null);
  const body =
    count === 0
      ? html`<p class="empty" role="status">${emptyText(kind, filtered)}</p>`
      : html`<p class="muted" role="status"><span data-testid="match-count">${count}</span> ${count === 1 ? 'message matches' : 'messages match'}${query.after === null ? '' : ' (a later page)'}.</p>
${kind === 'dlq' ? dlqForm(state, query, pageData, count, now) : messageTable(state, pageData.messages, now, false, query.queue !== '')}
${pager(path, query, pageData, kind === 'dlq')}`;
  return page(
    state,
    r,
    kind,
    title,
    html`<h1>${title}</h1>${kind === 'dlq' ? html`<p class="muted">Messages whose handler refused them or that ran out of attempts. Select some (or all matching the filter), preview a redrive with a handler version, then confirm.</p>` : ''}
${filterForm(path, values, null, kind === 'messages')}${body}`,
  );
}

function emptyText(kind: Kind, filtered: boolean): string {
  if (kind === 'dlq') {
    return filtered
      ? 'No dead messages match this filter.'
      : 'No dead messages — nothing to redrive.';
  }
  return filtered
    ? 'No messages match this filter.'
    : 'The store holds no messages yet: enqueue some with onceq enqueue.';
}

function fieldOf(error: unknown): FieldError | null {
  if (error instanceof ConsoleRequestError && error.field !== null) {
    return { field: error.field, message: error.message };
  }
  if (error instanceof ListArgumentError) return { field: 'after', message: error.message };
  return null;
}

function pager(path: string, query: ListQuery, data: MessagePage, dlq: boolean): Html {
  const first =
    query.after === null
      ? ''
      : html`<a href="${listHref(path, query, { after: null }, dlq)}">← First page</a>`;
  const next =
    data.next === null
      ? html`<span class="muted">last page</span>`
      : html`<a rel="next" href="${listHref(path, query, { after: data.next }, dlq)}">Next page →</a>`;
  return html`<nav class="pager" aria-label="Pages">${first}${next}</nav>`;
}

/** The DLQ table inside the preview form: pick ids or "all matching", pick a handler. */
function dlqForm(
  state: ConsoleState,
  query: ListQuery,
  data: MessagePage,
  count: number,
  now: number,
): Html {
  const hidden = (['queue', 'code', 'prefix', 'older', 'newer'] as const)
    .filter((k) => query[k] !== '')
    .map((k) => html`<input type="hidden" name="${k}" value="${query[k]}">`);
  // A POST: the ids of a whole selected page (500 UUIDs) do not fit in a URL.
  return html`<form method="post" action="/dlq/preview" aria-label="Preview a redrive">
${hidden}
${messageTable(state, data.messages, now, true, query.queue !== '')}
<fieldset class="actions"><legend>Redrive</legend>
<div class="field"><input type="radio" id="scope-selected" name="scope" value="selected" checked> <label for="scope-selected">the messages selected above</label></div>
<div class="field"><input type="radio" id="scope-all" name="scope" value="all"> <label for="scope-all">all ${count} matching this filter</label></div>
${handlerSelect(state.handlers, state.defaultHandler)}
<div class="field"><button type="submit">Preview redrive</button></div>
</fieldset></form>`;
}

export function handlerSelect(handlers: Readonly<Record<string, Handler>>, selected: string): Html {
  return html`<div class="field"><label for="f-handler">Handler to try</label><select id="f-handler" name="handler">
${Object.keys(handlers).map((name) => html`<option value="${name}"${name === selected ? html` selected` : ''}>${name}</option>`)}</select></div>`;
}
