/**
 * The outbox: deliveries per endpoint and state (an endpoint a 410 disabled says so),
 * then the dead deliveries with their last attempt. With writes allowed and signed in,
 * dead deliveries can be redriven (core's `redriveDeliveries`: all-or-nothing, sent
 * again under the same webhook-id by the next `onceq deliver`). Nothing here reads a
 * body, a header or a secret: none is stored with an attempt, and the endpoints' URLs
 * and secrets live only in the sender's configuration.
 */
import {
  DeliveryNotDeadError,
  DeliveryNotFoundError,
  deliveryCounts,
  listDeliveries,
  redriveDeliveries,
} from '@onceq/core/webhooks';
import type { ConsoleState, Request0 } from '../context.ts';
import { badParam, ConsoleRequestError } from '../errors.ts';
import { timeCell } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import { expectParams } from '../params.ts';
import { invalidateOverview } from './overview.ts';
import { writeForm } from './redrive.ts';

/** The most dead deliveries the page lists (and one redrive takes). */
export const MAX_DEAD_SHOWN = 200;

/** A webhook id: an event id, a colon, a delivery key. */
const WEBHOOK_ID = /^[\x21-\x7e]{1,200}:[A-Za-z0-9_.-]{1,64}$/;

export async function deliveriesPage(state: ConsoleState, r: Request0): Promise<Response> {
  expectParams(r.url.searchParams, []);
  const { store } = state;
  const counts = await deliveryCounts(store);
  const total = counts.reduce((sum, c) => sum + c.states.dead, 0);
  const dead =
    total === 0 ? [] : await listDeliveries(store, { state: 'dead', limit: MAX_DEAD_SHOWN });
  const now = store.clock();
  const canWrite = state.allowWrites && r.session !== null;
  const endpoints =
    counts.length === 0
      ? html`<p class="muted" data-testid="no-deliveries">No deliveries: no completion has declared one.</p>`
      : html`<div class="scroll"><table data-testid="endpoints">
<caption class="skip">Deliveries per endpoint</caption>
<thead><tr><th scope="col">Endpoint</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Leased</th><th scope="col" class="num">Delivered</th><th scope="col" class="num">Dead</th><th scope="col" class="num">Attempts</th><th scope="col">Disabled</th></tr></thead>
<tbody>${counts.map(
          (
            c,
          ) => html`<tr><td class="mono">${c.endpoint}</td><td class="num">${c.states.pending}</td><td class="num">${c.states.leased}</td><td class="num">${c.states.delivered}</td><td class="num">${c.states.dead}</td><td class="num">${c.attempts}</td>
<td>${c.disabled === null ? '—' : html`<span class="state state-dead">${c.disabled.reason}</span> ${timeCell(c.disabled.at, now)}`}</td></tr>`,
        )}</tbody></table></div>`;
  const rows = dead.map(
    (
      d,
    ) => html`<tr>${canWrite ? html`<td><input type="checkbox" name="ids" value="${d.webhookId}" aria-label="Select ${d.webhookId}"></td>` : ''}
<td class="mono">${d.webhookId}</td><td class="mono">${d.endpoint}</td><td class="num">${d.attempts}</td>
<td class="num">${d.lastStatus ?? '—'}</td><td>${d.lastError ?? '—'}</td>
<td class="wide">${d.finishedAt === null ? '—' : timeCell(d.finishedAt, now)}</td></tr>`,
  );
  const table = html`<div class="scroll"><table data-testid="dead-deliveries">
<caption class="skip">Dead deliveries</caption>
<thead><tr>${canWrite ? html`<th scope="col"><span class="skip">Select</span></th>` : ''}<th scope="col">Webhook id</th><th scope="col">Endpoint</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">Last status</th><th scope="col">Last error</th><th scope="col" class="wide">Dead since</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
  const more =
    total > dead.length ? html`<p class="muted">The first ${dead.length} of ${total}.</p>` : '';
  const deadPart =
    total === 0
      ? html`<p class="muted" data-testid="no-dead-deliveries">No dead deliveries.</p>`
      : canWrite
        ? html`<form method="post" action="/deliveries/redrive" aria-label="Redrive dead deliveries">
<input type="hidden" name="csrf" value="${r.session?.csrf ?? ''}">
${table}${more}
<div class="field"><button type="submit">Redrive the selected deliveries</button></div></form>`
        : html`${table}${more}<p class="muted">${state.allowWrites ? html`<a href="/login?next=/deliveries">Sign in</a> to redrive them` : 'Redrive them with onceq deliveries redrive (this console is read-only)'}.</p>`;
  return page(
    state,
    r,
    'deliveries',
    'Deliveries',
    html`<h1>Deliveries</h1>
${endpoints}
<h2>Dead deliveries <span class="count">${total}</span></h2>
${deadPart}`,
  );
}

export async function deliveriesRedriveAction(state: ConsoleState, r: Request0): Promise<Response> {
  const { form, who } = await writeForm(state, r, { to: 'redrive', ing: 'redriving' });
  const ids = [...new Set(form.getAll('ids'))];
  for (const id of ids) {
    if (!WEBHOOK_ID.test(id)) {
      throw badParam('ids', `${JSON.stringify(id.slice(0, 40))} is not a webhook id`);
    }
  }
  if (ids.length === 0) throw badParam('ids', 'no delivery to redrive was selected');
  if (ids.length > MAX_DEAD_SHOWN) {
    throw badParam('ids', `at most ${MAX_DEAD_SHOWN} deliveries at a time, not ${ids.length}`);
  }
  let redriven: string[];
  try {
    redriven = await redriveDeliveries(state.store, ids);
  } catch (error) {
    const plain =
      error instanceof DeliveryNotDeadError || error instanceof DeliveryNotFoundError
        ? new ConsoleRequestError(
            409,
            error.code,
            `${error.message}: reload the deliveries and select again.`,
          )
        : null;
    state.log(
      `onceq console: delivery redrive of ${ids.length} by ${who} refused: ${plain?.message ?? (error as Error).message}`,
    );
    throw plain ?? error;
  }
  invalidateOverview(state);
  state.log(`onceq console: delivery redrive by ${who}: ${redriven.join(', ')}`);
  return page(
    state,
    r,
    'deliveries',
    'Redriven',
    html`<h1>Redriven</h1>
<p class="notice ok" role="status" data-testid="redrive-result">Redriven <strong>${redriven.length}</strong> ${redriven.length === 1 ? 'delivery' : 'deliveries'}: ${redriven.join(', ')}. The next <code>onceq deliver</code> sends ${redriven.length === 1 ? 'it' : 'them'} again under the same webhook-id.</p>
<p><a href="/deliveries">Back to the deliveries</a></p>`,
  );
}
