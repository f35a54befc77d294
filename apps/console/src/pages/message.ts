/** One message in full: `/messages/<event id>`. */

import type { MessageView } from '@onceq/core';
import { NotFoundError, show } from '@onceq/core';
import type { ConsoleState, Request0 } from '../context.ts';
import { ConsoleRequestError } from '../errors.ts';
import { prettyPayload, timeCell } from '../format.ts';
import { type Html, html } from '../html.ts';
import { page } from '../layout.ts';

export async function messagePage(
  state: ConsoleState,
  r: Request0,
  eventId: string,
): Promise<Response> {
  let m: MessageView;
  try {
    m = await show(state.store, eventId);
  } catch (error) {
    if (error instanceof NotFoundError) {
      throw new ConsoleRequestError(
        404,
        'not_found',
        `No message has the event id ${JSON.stringify(eventId)}.`,
      );
    }
    throw error;
  }
  const now = state.store.clock();
  return page(
    state,
    r,
    'messages',
    m.eventId,
    html`<p><a href="/messages">← Messages</a>${m.state === 'dead' ? html` · <a href="/dlq">Dead letters</a>` : ''}</p>
<h1>Message <span class="mono">${m.eventId}</span> <span class="state state-${m.state}">${m.state}</span></h1>
<div class="cards">
<section class="card" aria-labelledby="h-facts"><h2 id="h-facts">State</h2><dl class="facts">
<dt>state</dt><dd data-testid="state">${m.state}</dd>
<dt>attempts</dt><dd>${m.attempts} in this cycle (of ${state.store.protocol.maxAttempts})</dd>
<dt>generation</dt><dd>${m.generation}</dd>
<dt>lease</dt><dd>${lease(m, now)}</dd>
<dt>available</dt><dd>${timeCell(m.availableAt, now)}</dd>
<dt>enqueued</dt><dd>${timeCell(m.enqueuedAt, now)}</dd>
<dt>last change</dt><dd>${timeCell(m.updatedAt, now)}</dd></dl></section>
<section class="card" aria-labelledby="h-error"><h2 id="h-error">Last error</h2>${
      m.lastErrorCode === null
        ? html`<p class="muted">none</p>`
        : html`<dl class="facts"><dt>code</dt><dd class="mono" data-testid="error-code">${m.lastErrorCode}</dd><dt>detail</dt><dd>${m.lastErrorDetail ?? '—'}</dd></dl>`
    }</section>
<section class="card" aria-labelledby="h-effect"><h2 id="h-effect">Effect</h2>${effect(m)}</section>
</div>
<section class="section" aria-labelledby="h-payload"><h2 id="h-payload">Payload <span class="muted">(canonical form${state.hideFields.size > 0 ? ', some fields hidden' : ''})</span></h2>
${m.payloadText === null ? html`<p class="muted" data-testid="payload">pruned: only its SHA-256 is kept, so a repeat is still a duplicate</p>` : html`<pre data-testid="payload">${prettyPayload(m.payloadText, state.hideFields)}</pre>`}</section>`,
  );
}

function lease(m: MessageView, now: number): Html {
  if (m.leaseUntil === null) return html`<span class="muted">none</span>`;
  const expired = m.leaseUntil <= now;
  return html`until ${timeCell(m.leaseUntil, now)}${expired ? html` <strong>expired</strong> (the next claim recovers it)` : ''}`;
}

function effect(m: MessageView): Html {
  if (m.completion !== null) {
    return html`<dl class="facts"><dt>completion</dt><dd>${m.completion.summary ?? "the handler's own rows (no summary)"}</dd></dl>`;
  }
  if (m.effect === null) return html`<p class="muted">none: this message has not been applied</p>`;
  return html`<dl class="facts"><dt>category</dt><dd>${m.effect.category}</dd><dt>amount_cents</dt><dd>${m.effect.amountCents}</dd></dl>`;
}
