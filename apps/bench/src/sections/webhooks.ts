/**
 * Webhooks: `onceq serve` under 64 concurrent senders beside its bare baseline (Bun.serve
 * and bun:sqlite, same senders, same run), and the sender's delivery rate
 * (scenarios/webhooks.ts).
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { section, table } from '../report.ts';
import { runDeliver, runServe, type ServeRun } from '../scenarios/webhooks.ts';
import { fmtMs, fmtRate, spread } from '../util.ts';

const SENDERS = 64;

export async function webhooksSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, out, targets, results, log } = ctx;
  if (!opts.only.has('webhooks')) return;
  const requests = opts.quick ? 4000 : 20_000;
  const messages = opts.quick ? 1000 : 5000;
  const runs = opts.quick ? 1 : opts.runs;
  // Alternating rounds, so both servers meet the same moments of a shared machine.
  const serve: ServeRun[] = [];
  const bare: ServeRun[] = [];
  for (let round = 1; round <= runs; round++) {
    log(
      `onceq serve and the bare baseline: ${requests} signed webhooks from ${SENDERS} senders (SQLite FULL), round ${round}/${runs} …`,
    );
    serve.push(await runServe(mkdtempSync(join(scratch, 'serve-')), requests, SENDERS));
    bare.push(await runServe(mkdtempSync(join(scratch, 'bare-')), requests, SENDERS, 'bare'));
  }
  log(`onceq deliver: ${messages} deliveries to a local receiver …`);
  const deliver = await runDeliver(mkdtempSync(join(scratch, 'deliver-')), messages);
  const median = (runs: readonly ServeRun[], pick: (r: ServeRun) => number) =>
    spread(runs.map(pick)).median;
  const row = (name: string, runs: readonly ServeRun[]) => [
    `${name}, ${requests} requests, ${SENDERS} senders`,
    `${fmtRate(median(runs, (r) => r.perSecond))}/s`,
    `${fmtMs(median(runs, (r) => r.p50Ms))} / ${fmtMs(median(runs, (r) => r.p99Ms))} ms`,
    `${Math.round(median(runs, (r) => r.serverCpuUs))} µs`,
  ];
  const serveRate = median(serve, (r) => r.perSecond);
  const serveP99 = median(serve, (r) => r.p99Ms);
  const ratio = spread(serve.map((r, i) => r.perSecond / (bare[i] as ServeRun).perSecond));
  results.webhooks = { serve, bare, ratio, deliver };
  out.push(section('Webhooks on SQLite FULL, loopback (scenarios/webhooks.ts)'));
  out.push(
    table(
      ['measure', 'rate', 'latency p50 / p99', 'server CPU per request'],
      [
        row('onceq serve', serve),
        row('bare Bun.serve + bun:sqlite', bare),
        [
          'onceq serve / bare, same round',
          `${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`,
          '-',
          '-',
        ],
        [
          `deliver, ${deliver.deliveries} deliveries, 1 sender`,
          `${fmtRate(deliver.perSecond)}/s`,
          '-',
          '-',
        ],
      ],
    ),
  );
  out.push(
    'The senders are keep-alive connections spread over four processes, their requests signed before the clock starts. The bare baseline checks the same signature, parses with JSON.parse and commits the requests that arrived together in one transaction; it has no id policy, dedup check, payload rules or counters. Its rate on the same machine in the same round is what the ratio compares with.',
  );
  targets.push({
    target: `onceq serve ≥ ${fmtRate(TARGETS.serveRate)} webhooks/s with p99 < ${TARGETS.serveP99Ms} ms (64 senders, SQLite FULL)`,
    measured: `${fmtRate(serveRate)}/s, p99 ${fmtMs(serveP99)} ms (${ratio.median.toFixed(2)}× the bare baseline)`,
    met: serveRate >= TARGETS.serveRate && serveP99 < TARGETS.serveP99Ms,
  });
  targets.push({
    target: `deliveries ≥ ${fmtRate(TARGETS.deliveryRate)}/s to a local receiver, 1 sender`,
    measured: `${fmtRate(deliver.perSecond)}/s`,
    met: deliver.perSecond >= TARGETS.deliveryRate,
  });
}
