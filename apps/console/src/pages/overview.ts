/**
 * The overview: counts by state, effects and money by category, how long the oldest
 * ready and dead messages have waited, and throughput. It costs the store one statement,
 * the snapshot `onceq status` and `/metrics` read too (so the three agree), cached for
 * the store clock's current second so any number of open pages polling every 2 s stay
 * at one read a second.
 */

import type { StatusReport } from '@onceq/core';
import { type QueueSnapshot, queueSnapshot, reportedStates } from '@onceq/core/admin';
import { duration } from '@onceq/core/internal';
import type { ConsoleState, Request0 } from '../context.ts';
import { timeCell } from '../format.ts';
import { type Html, html } from '../html.ts';
import { htmlResponse, page } from '../layout.ts';
import { throughputChart } from '../throughput.ts';

/** The overview's figures: one snapshot of the store (`now` is its clock at the read). */
export type OverviewData = QueueSnapshot;

const cache = new WeakMap<ConsoleState, { at: number; data: Promise<OverviewData> }>();

/**
 * The overview figures, read at most once per second of the store's clock per console
 * (the clock is whole seconds; a test's model clock decides when a second has passed).
 */
export function readOverview(state: ConsoleState): Promise<OverviewData> {
  const second = state.store.clock();
  const hit = cache.get(state);
  if (hit !== undefined && hit.at === second) return hit.data;
  const data = (async () => {
    const snapshot = await queueSnapshot(state.store);
    state.throughput.record(snapshot.now, snapshot.report.effects);
    return snapshot;
  })();
  cache.set(state, { at: second, data });
  data.catch(() => cache.delete(state));
  return data;
}

/** Forget the cached figures (after a write from this console). */
export function invalidateOverview(state: ConsoleState): void {
  cache.delete(state);
}

function readyAge(ages: OverviewData, now: number): Html {
  if (ages.oldestReadyAt === null && ages.nextDueAt !== null) {
    return html`<p class="big">0 s</p><p class="muted">the next retry is due ${timeCell(ages.nextDueAt, now)}</p>`;
  }
  if (ages.oldestReadyAt === null)
    return html`<p class="big">none</p><p class="muted">nothing is waiting to be claimed</p>`;
  return html`<p class="big">${duration(now - ages.oldestReadyAt)}</p><p class="muted">ready since ${timeCell(ages.oldestReadyAt, now)}</p>`;
}

function deadCard(report: StatusReport, ages: OverviewData, now: number): Html {
  const dead = report.messages.dead;
  if (dead === 0 || ages.oldestDeadAt === null) {
    return html`<p class="big" data-testid="dead-count">0</p><p class="muted">no dead messages — nothing to redrive</p>`;
  }
  return html`<p class="big" data-testid="dead-count">${dead}</p>
<p class="muted">the oldest died ${timeCell(ages.oldestDeadAt, now)}</p>
<p><a href="/dlq">Review and redrive →</a></p>`;
}

/**
 * What was processed: every done message, whether its outcome is the lesson's money
 * effect or a completion of your own handler (a done message has exactly one of them).
 */
function processed(report: StatusReport): string {
  const done = report.messages.done;
  const completions = Math.max(0, done - report.effects);
  const parts = [`${report.effects} money effect${report.effects === 1 ? '' : 's'}`];
  if (completions > 0) parts.push(`${completions} completion${completions === 1 ? '' : 's'}`);
  return `${done} processed: ${parts.join(', ')}`;
}

/** The part of the overview that refreshes live. */
export function overviewFragment(state: ConsoleState, data: OverviewData): Html {
  const { report, now } = data;
  const ages = data;
  const states = reportedStates(report.messages);
  const total = states.reduce((sum, s) => sum + (report.messages[s] ?? 0), 0);
  const categories = Object.entries(report.totals);
  return html`<div class="cards">
<section class="card" aria-labelledby="h-states"><h2 id="h-states">Messages by state</h2>
<table><tbody>${states.map(
    (s) =>
      html`<tr><th scope="row"><a href="/messages?state=${s}">${s}</a></th><td class="num" data-testid="count-${s}">${report.messages[s] ?? 0}</td></tr>`,
  )}<tr><th scope="row">total</th><td class="num">${total}</td></tr></tbody></table></section>
<section class="card" aria-labelledby="h-ready"><h2 id="h-ready">Oldest ready message</h2>${readyAge(ages, now)}</section>
<section class="card" aria-labelledby="h-dead"><h2 id="h-dead">Dead letters</h2>${deadCard(report, ages, now)}</section>
<section class="card" aria-labelledby="h-totals"><h2 id="h-totals">Totals by category</h2>
${
  categories.length === 0
    ? html`<p class="muted">${report.messages.done === 0 ? 'nothing has been processed yet' : "no money effects: each done message recorded its own handler's outcome"}</p>`
    : html`<table><thead><tr><th scope="col">category</th><th scope="col" class="num">amount_cents</th></tr></thead><tbody>
${categories.map(([c, amount]) => html`<tr><th scope="row">${c}</th><td class="num" data-testid="total-${c}">${amount}</td></tr>`)}
<tr><th scope="row">total</th><td class="num" data-testid="total-all">${report.total}</td></tr></tbody></table>`
}
<p class="muted" data-testid="processed">${processed(report)}</p></section>
<section class="card wide" aria-labelledby="h-rate"><h2 id="h-rate">Throughput</h2>
${throughputChart(state.throughput.rates(), now, state.throughput.window)}</section>
</div>`;
}

export async function overviewPage(state: ConsoleState, r: Request0): Promise<Response> {
  const data = await readOverview(state);
  return page(
    state,
    r,
    'overview',
    'Overview',
    html`<h1>Overview</h1>
<div class="live-bar"><button type="button" id="pause" class="secondary" aria-pressed="false" aria-controls="live">Pause live updates</button>
<span id="live-status" class="muted" role="status">live, every 2 s</span></div>
<div id="live" data-live-src="/overview/live">${overviewFragment(state, data)}</div>`,
  );
}

export async function overviewLive(state: ConsoleState): Promise<Response> {
  return htmlResponse(overviewFragment(state, await readOverview(state)).text);
}
