/** Webhooks: `onceq serve` under 64 concurrent senders, and the sender's delivery rate (scenarios/webhooks.ts). */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { SectionContext } from '../context.ts';
import { TARGETS } from '../options.ts';
import { section, table } from '../report.ts';
import { runDeliver, runServe } from '../scenarios/webhooks.ts';
import { fmtMs, fmtRate } from '../util.ts';

export async function webhooksSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, out, targets, results, log } = ctx;
  if (!opts.only.has('webhooks')) return;
  const requests = opts.quick ? 2000 : 20_000;
  const messages = opts.quick ? 1000 : 5000;
  log(`onceq serve: ${requests} signed webhooks from 64 senders (SQLite FULL) …`);
  const serve = await runServe(mkdtempSync(join(scratch, 'serve-')), requests, 64);
  log(`onceq deliver: ${messages} deliveries to a local receiver …`);
  const deliver = await runDeliver(mkdtempSync(join(scratch, 'deliver-')), messages);
  results.webhooks = { serve, deliver };
  out.push(section('Webhooks on SQLite FULL, loopback (scenarios/webhooks.ts)'));
  out.push(
    table(
      ['measure', 'rate', 'latency p50 / p99'],
      [
        [
          `serve, ${serve.requests} requests, 64 senders`,
          `${fmtRate(serve.perSecond)}/s`,
          `${fmtMs(serve.p50Ms)} / ${fmtMs(serve.p99Ms)} ms`,
        ],
        [
          `deliver, ${deliver.deliveries} deliveries, 1 sender`,
          `${fmtRate(deliver.perSecond)}/s`,
          '-',
        ],
      ],
    ),
  );
  targets.push({
    target: `onceq serve ≥ ${fmtRate(TARGETS.serveRate)} webhooks/s with p99 < ${TARGETS.serveP99Ms} ms (64 senders, SQLite FULL)`,
    measured: `${fmtRate(serve.perSecond)}/s, p99 ${fmtMs(serve.p99Ms)} ms`,
    met: serve.perSecond >= TARGETS.serveRate && serve.p99Ms < TARGETS.serveP99Ms,
  });
  targets.push({
    target: `deliveries ≥ ${fmtRate(TARGETS.deliveryRate)}/s to a local receiver, 1 sender`,
    measured: `${fmtRate(deliver.perSecond)}/s`,
    met: deliver.perSecond >= TARGETS.deliveryRate,
  });
}
