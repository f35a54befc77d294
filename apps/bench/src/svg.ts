/**
 * Small SVG line charts for the bench pages: one panel per series, stacked, the x axis
 * shared. No dependency: a few rectangles, polylines and labels.
 */

export interface ChartSeries {
  label: string;
  values: readonly (number | null)[];
}

const WIDTH = 640;
const PANEL = 90;
const LEFT = 70;
const RIGHT = 20;
const TOP = 30;

function xmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function tick(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const abs = Math.abs(n);
  return abs >= 100 ? Math.round(n).toLocaleString('en-US') : n.toPrecision(3);
}

/**
 * `series` over `xs` (one value per x; null = not measured), each in its own panel
 * scaled from 0 to its maximum; `shadeBefore` greys the x range before it (a warm-up).
 */
export function lineChart(
  title: string,
  xLabel: string,
  xs: readonly number[],
  series: readonly ChartSeries[],
  shadeBefore?: number,
): string {
  const height = TOP + series.length * (PANEL + 20) + 30;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const xMax = Math.max(1, ...xs);
  const x = (v: number) => LEFT + (v / xMax) * plotWidth;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-size="13" font-weight="bold">${xmlText(title)}</text>`,
  ];
  series.forEach((s, k) => {
    const top = TOP + k * (PANEL + 20);
    const values = s.values.map((v) => (v === null || !Number.isFinite(v) ? null : v));
    const yMax = Math.max(0, ...values.filter((v): v is number => v !== null)) || 1;
    const y = (v: number) => top + PANEL - (v / yMax) * PANEL;
    parts.push(
      `<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL}" fill="none" stroke="#ccc"/>`,
    );
    if (shadeBefore !== undefined && shadeBefore > 0) {
      parts.push(
        `<rect x="${LEFT}" y="${top}" width="${x(shadeBefore) - LEFT}" height="${PANEL}" fill="#eee"/>`,
      );
    }
    parts.push(
      `<text x="${LEFT - 6}" y="${top + 10}" text-anchor="end">${tick(yMax)}</text>`,
      `<text x="${LEFT - 6}" y="${top + PANEL}" text-anchor="end">0</text>`,
      `<text x="${LEFT + 6}" y="${top + 13}" fill="#333">${xmlText(s.label)}</text>`,
    );
    const points = values
      .map((v, i) => (v === null ? null : `${x(xs[i] ?? 0).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p): p is string => p !== null);
    if (points.length > 0) {
      parts.push(
        `<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="${points.join(' ')}"/>`,
      );
    }
  });
  const bottom = TOP + series.length * (PANEL + 20);
  parts.push(
    `<text x="${LEFT}" y="${bottom}">0</text>`,
    `<text x="${WIDTH - RIGHT}" y="${bottom}" text-anchor="end">${tick(xMax)}</text>`,
    `<text x="${LEFT + plotWidth / 2}" y="${bottom + 14}" text-anchor="middle">${xmlText(xLabel)}</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}
