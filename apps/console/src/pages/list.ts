/** The parts the message list and the DLQ share: the filter form and the table. */
import type { MessageView } from '@onceq/core';
import { LIST_ORDERS, MESSAGE_STATES } from '@onceq/core/admin';
import { DEFAULT_QUEUE } from '@onceq/core/internal';
import type { ConsoleState } from '../context.ts';
import { shortPayload, timeCell } from '../format.ts';
import { type Html, html } from '../html.ts';

/** The filter form's values as typed (also when one of them is invalid). */
export interface FormValues {
  state: string;
  queue: string;
  code: string;
  prefix: string;
  older: string;
  newer: string;
  order: string;
  limit: string;
}

export function formValues(params: URLSearchParams): FormValues {
  const get = (k: string, d = '') => params.get(k) ?? d;
  return {
    state: get('state'),
    queue: get('queue'),
    code: get('code'),
    prefix: get('prefix'),
    older: get('older'),
    newer: get('newer'),
    order: get('order', 'id'),
    limit: get('limit', '50'),
  };
}

/** A problem shown under the field that caused it. */
export interface FieldError {
  field: string;
  message: string;
}

function fieldError(error: FieldError | null, field: string): Html {
  return error !== null && error.field === field
    ? html`<p class="error" id="err-${field}" role="alert">${error.message}</p>`
    : html``;
}

function described(error: FieldError | null, field: string): Html {
  return error !== null && error.field === field
    ? html` aria-invalid="true" aria-describedby="err-${field}"`
    : html``;
}

function input(
  v: FormValues,
  error: FieldError | null,
  field: keyof FormValues,
  label: string,
  hint: string,
): Html {
  return html`<div class="field"><label for="f-${field}">${label}</label>
<input id="f-${field}" name="${field}" value="${v[field]}" placeholder="${hint}" size="10"${described(error, field)}>${fieldError(error, field)}</div>`;
}

/** The GET filter form; `withState` false on the DLQ (always `dead`). */
export function filterForm(
  action: string,
  v: FormValues,
  error: FieldError | null,
  withState: boolean,
): Html {
  const stateSelect = withState
    ? html`<div class="field"><label for="f-state">State</label><select id="f-state" name="state"${described(error, 'state')}>
<option value="">any</option>${MESSAGE_STATES.map((s) => html`<option${s === v.state ? html` selected` : ''}>${s}</option>`)}</select>${fieldError(error, 'state')}</div>`
    : html``;
  return html`<form class="filters" method="get" action="${action}" aria-label="Filter messages">
${stateSelect}
${input(v, error, 'queue', 'Queue', 'default')}
${input(v, error, 'code', 'Error code', 'invalid_payload')}
${input(v, error, 'prefix', 'Event id starts with', 'E00')}
${input(v, error, 'older', 'Changed more than … ago', '10m')}
${input(v, error, 'newer', 'Changed less than … ago', '2h')}
<div class="field"><label for="f-order">Sort</label><select id="f-order" name="order"${described(error, 'order')}>
${LIST_ORDERS.map((o) => html`<option value="${o}"${o === v.order ? html` selected` : ''}>${ORDER_LABELS[o]}</option>`)}</select>${fieldError(error, 'order')}</div>
${input(v, error, 'limit', 'Per page', '50')}
<div class="field"><button type="submit">Apply filters</button> <a href="${action}">Clear</a></div>
</form>${error !== null && (!FIELDS.has(error.field) || (!withState && error.field === 'state')) ? html`<p class="notice bad" role="alert">${error.message}</p>` : ''}`;
}

const FIELDS = new Set(['state', 'queue', 'code', 'prefix', 'older', 'newer', 'order', 'limit']);

const ORDER_LABELS: Record<(typeof LIST_ORDERS)[number], string> = {
  id: 'by event id',
  oldest: 'oldest change first',
  newest: 'newest change first',
};

/**
 * The table of one page; `selectable` adds the DLQ's checkboxes. A queue column when
 * `withQueue` or a message of the page is in a queue other than `default`: a store of
 * the default queue alone shows the table it always showed.
 */
export function messageTable(
  state: ConsoleState,
  messages: readonly MessageView[],
  now: number,
  selectable: boolean,
  withQueue = false,
): Html {
  const queues = withQueue || messages.some((m) => m.queue !== DEFAULT_QUEUE);
  return html`<div class="scroll"><table>
<caption class="skip">Messages</caption>
<thead><tr>${selectable ? html`<th scope="col"><input type="checkbox" id="select-page" aria-label="Select every message on this page"></th>` : ''}
<th scope="col">Event id</th>${queues ? html`<th scope="col">Queue</th>` : ''}<th scope="col">State</th><th scope="col" class="num">Attempts</th><th scope="col">Last error</th><th scope="col" class="wide">Last change</th><th scope="col" class="wide">Payload</th></tr></thead>
<tbody>${messages.map(
    (
      m,
    ) => html`<tr>${selectable ? html`<td><input type="checkbox" name="ids" value="${m.eventId}" aria-label="Select ${m.eventId}"></td>` : ''}
<td class="mono"><a href="/messages/${encodeURIComponent(m.eventId)}">${m.eventId}</a></td>
${queues ? html`<td class="mono">${m.queue}</td>` : ''}<td><span class="state state-${m.state}">${m.state}</span></td>
<td class="num">${m.attempts}</td>
<td class="mono">${m.lastErrorCode ?? '—'}</td>
<td class="wide">${timeCell(m.updatedAt, now)}</td>
<td class="wide mono">${m.payloadText === null ? html`<span class="muted">pruned</span>` : shortPayload(m.payloadText, state.hideFields)}</td></tr>`,
  )}</tbody></table></div>`;
}
