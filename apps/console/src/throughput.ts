/**
 * Throughput from the console's own samples: each overview read records the number of
 * effects (= messages done) at that time; the chart shows the rate between samples.
 * Nothing is stored in the database and no extra query runs for it.
 */
import { type Html, html, raw } from './html.ts';

interface Sample {
  /** Unix seconds (the store's clock). */
  at: number;
  effects: number;
}

export interface RatePoint {
  /** End of the interval, Unix seconds. */
  at: number;
  /** Messages done per minute over the interval. */
  perMinute: number;
}

export class Throughput {
  readonly #samples: Sample[] = [];
  /** Samples closer than this are not kept, seconds. Default 5. */
  readonly spacing: number;
  /** How far back the chart looks, seconds. Default 600 (10 min). */
  readonly window: number;

  constructor(spacing = 5, window = 600) {
    this.spacing = spacing;
    this.window = window;
  }

  record(at: number, effects: number): void {
    const last = this.#samples[this.#samples.length - 1];
    if (last !== undefined && at - last.at < this.spacing) return;
    this.#samples.push({ at, effects });
    while (this.#samples.length > 0 && (this.#samples[0] as Sample).at < at - this.window) {
      this.#samples.shift();
    }
  }

  rates(): RatePoint[] {
    const points: RatePoint[] = [];
    for (let i = 1; i < this.#samples.length; i++) {
      const a = this.#samples[i - 1] as Sample;
      const b = this.#samples[i] as Sample;
      points.push({
        at: b.at,
        perMinute: (Math.max(0, b.effects - a.effects) * 60) / (b.at - a.at),
      });
    }
    return points;
  }
}

const W = 600;
const H = 120;

/** The rate as a small inline SVG line chart with its peak and time span labelled. */
export function throughputChart(points: readonly RatePoint[], now: number, window: number): Html {
  if (points.length < 2) {
    return html`<p class="muted">Collecting samples: the chart fills in while this page stays open (one sample every few seconds).</p>`;
  }
  const peak = Math.max(1, ...points.map((p) => p.perMinute));
  const x = (at: number) => (W * (at - (now - window))) / window;
  const y = (v: number) => H - 14 - ((H - 24) * v) / peak;
  const coords = points.map((p) => `${x(p.at).toFixed(1)},${y(p.perMinute).toFixed(1)}`).join(' ');
  const latest = points[points.length - 1] as RatePoint;
  const label = `Messages done per minute over the last ${window / 60} minutes; latest ${Math.round(latest.perMinute)}, peak ${Math.round(peak)}`;
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${label}">
<line class="axis" x1="0" y1="${H - 14}" x2="${W}" y2="${H - 14}"/>
<polyline class="line" points="${raw(coords)}"/>
<text x="2" y="10">${Math.round(peak)}/min</text><text x="2" y="${H - 2}">−${window / 60} min</text><text x="${W - 2}" y="${H - 2}" text-anchor="end">now</text>
</svg><p class="muted">latest ${Math.round(latest.perMinute)} per minute</p>`;
}
