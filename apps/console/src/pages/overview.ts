/**
 * The overview: counts by state, effects and money by category, how long the oldest
 * ready and dead messages have waited, and throughput. It costs the store three cheap
 * queries (status's two grouped counts and the two ages), cached for one second so any
 * number of open pages polling every 2 s stay under one round a second.
 */
import { status } from '@onceq/core';
import { type QueueAges, queueAges, reportedStates, type StatusReport } from '@onceq/core/internal';
import type { ConsoleState, Request0 } from '../context.ts';
import { duration, timeCell } from '../format.ts';
import { type Html, html } from '../html.ts';
import { htmlResponse, page } from '../layout.ts';
import { throughputChart } from '../throughput.ts';

export interface OverviewData {
  report: StatusReport;
  ages: QueueAges;
  /** Store clock at the read, Unix seconds. */
  now: number;
}

/** How long one read serves every page, ms. */
const CACHE_MS = 1000;
const cache = new WeakMap<ConsoleState, { at: number; data: Promise<OverviewData> }>();

/** The overview figures, read at most once a second per console. */
export function readOverview(state: ConsoleState): Promise<OverviewData> {
  const hit = cache.get(state);
  if (hit !== undefined && Date.now() - hit.at < CACHE_MS) return hit.data;
  const data = (async () => {
    const [report, ages] = await Promise.all([status(state.store), queueAges(state.store)]);
    const now = state.store.clock();
    state.throughput.record(now, report.effects);
    return { report, ages, now };
  })();
  cache.set(state, { at: Date.now(), data });
  data.catch(() => cache.delete(state));
  return data;
}

/** Forget the cached figures (after a write from this console). */
export function invalidateOverview(state: ConsoleState): void {
  cache.delete(state);
}

function readyAge(ages: QueueAges, now: number): Html {
  if (ages.oldestReadyAt === null)
    return html`<p class="big">none</p><p class="muted">nothing is waiting to be claimed</p>`;
  if (ages.oldestReadyAt > now) {
    return html`<p class="big">0 s</p><p class="muted">the next retry is due ${timeCell(ages.oldestReadyAt, now)}</p>`;
  }
  return html`<p class="big">${duration(now - ages.oldestReadyAt)}</p><p class="muted">ready since ${timeCell(ages.oldestReadyAt, now)}</p>`;
}

function deadCard(report: StatusReport, ages: QueueAges, now: number): Html {
  const dead = report.messages.dead;
  if (dead === 0 || ages.oldestDeadAt === null) {
    return html`<p class="big" data-testid="dead-count">0</p><p class="muted">no dead messages — nothing to redrive</p>`;
  }
  return html`<p class="big" data-testid="dead-count">${dead}</p>
<p class="muted">the oldest died ${timeCell(ages.oldestDeadAt, now)}</p>
<p><a href="/dlq">Review and redrive →</a></p>`;
}

/** The part of the overview that refreshes live. */
export function overviewFragment(state: ConsoleState, data: OverviewData): Html {
  const { report, ages, now } = data;
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
    ? html`<p class="muted">no effects yet: nothing has been processed</p>`
    : html`<table><thead><tr><th scope="col">category</th><th scope="col" class="num">amount_cents</th></tr></thead><tbody>
${categories.map(([c, amount]) => html`<tr><th scope="row">${c}</th><td class="num" data-testid="total-${c}">${amount}</td></tr>`)}
<tr><th scope="row">total</th><td class="num" data-testid="total-all">${report.total}</td></tr></tbody></table>`
}
<p class="muted">${report.effects} effects</p></section>
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
