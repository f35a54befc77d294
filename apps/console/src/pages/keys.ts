/**
 * The blocked keys (`/keys`): the ordering keys held by a dead head (docs/ordering.md),
 * each with its head, why the head died, since when, and how many messages wait behind
 * it; the head links to its message. One read snapshot: core's `blockedKeys`, the same
 * list `onceq status` and `onceq dlq` print.
 */
import { blockedKeys } from '@onceq/core/admin';
import type { ConsoleState, Request0 } from '../context.ts';
import { timeCell } from '../format.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';

/** Keys listed on the page, first by key. */
const SHOWN = 100;

export async function keysPage(state: ConsoleState, r: Request0): Promise<Response> {
  const now = state.store.clock();
  const blocked = await blockedKeys(state.store, { limit: SHOWN });
  const intro = html`<p class="muted">Ordering keys whose head, the oldest unfinished message of the key, is dead: nothing later of the key is handed out until the head is redriven (the key resumes in order, from the dead letters) or skipped (<code>onceq skip</code>).</p>`;
  const body =
    blocked.count === 0
      ? html`<p class="empty" role="status">No blocked keys: no ordering key is held by a dead message.</p>`
      : html`<p class="muted" role="status"><span data-testid="blocked-count">${blocked.count}</span> ${blocked.count === 1 ? 'key is' : 'keys are'} blocked${blocked.count > blocked.keys.length ? ` (the first ${blocked.keys.length} by key)` : ''}.</p>
<div class="scroll"><table>
<caption class="skip">Blocked keys</caption>
<thead><tr><th scope="col">Key</th><th scope="col">Dead head</th><th scope="col">Error</th><th scope="col" class="wide">Dead since</th><th scope="col" class="num">Waiting behind</th></tr></thead>
<tbody>${blocked.keys.map(
          (k) => html`<tr><td class="mono">${k.key}</td>
<td class="mono"><a href="/messages/${encodeURIComponent(k.eventId)}">${k.eventId}</a></td>
<td><span class="mono">${k.code ?? '—'}</span>${k.detail === null ? '' : html`<br><span class="muted">${k.detail}</span>`}</td>
<td class="wide">${timeCell(k.deadSince, now)}</td>
<td class="num" data-testid="waiting-${k.key}">${k.waiting}</td></tr>`,
        )}</tbody></table></div>`;
  return page(state, r, 'keys', 'Blocked keys', html`<h1>Blocked keys</h1>${intro}${body}`);
}
