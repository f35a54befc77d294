/** Real event streams: general ids at enqueue, a store of 1,000,000 messages, prune under load. */
import type { SectionContext } from '../context.ts';
import { msCell, rateCell, section, table } from '../report.ts';
import { runStreams } from '../scenarios/streams.ts';
import { fmtRate } from '../util.ts';

export async function streamsSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, out, targets, results, log } = ctx;
  if (!opts.only.has('streams')) return;
  log('streams (general ids, 1,000,000 messages, prune under load) …');
  const r = await runStreams(scratch, {
    messages: opts.quick ? 100_000 : 1_000_000,
    repeats: opts.runs,
    log,
  });
  results.streams = r;
  out.push(
    section(
      `Streams: UUID ids, a store of ${r.large.messages} messages, prune under load (SQLite FULL)`,
    ),
  );
  out.push(
    table(
      ['measure', 'value'],
      [
        ['enqueue, lesson ids (lines/s)', rateCell(r.enqueue.lessonRate)],
        ['enqueue, random UUIDv4 ids, general (lines/s)', rateCell(r.enqueue.generalRate)],
        ['enqueue, time-ordered 36-char ids, general (lines/s)', rateCell(r.enqueue.orderedRate)],
        [`build ${r.large.messages} messages (ms)`, String(Math.round(r.large.buildMs))],
        ['claim (ms)', msCell(r.large.claimMs)],
        ['status (ms)', msCell(r.large.statusMs)],
        [`prune ${r.prune.pruned} done (ms)`, String(Math.round(r.prune.pruneMs))],
        [
          'worker alone / during prune (msg/s)',
          `${fmtRate(r.prune.baselineRate)} / ${fmtRate(r.prune.duringRate)}`,
        ],
      ],
    ),
  );
  targets.push(
    {
      target: 'enqueue with random 36-char UUIDv4 ids (general) ≥ 0.9× lesson ids',
      measured: `${r.enqueue.ratio.toFixed(2)}×`,
      met: r.enqueue.ratio >= 0.9,
    },
    {
      target: 'enqueue with time-ordered 36-char ids (general) ≥ 0.9× lesson ids',
      measured: `${r.enqueue.orderedRatio.toFixed(2)}×`,
      met: r.enqueue.orderedRatio >= 0.9,
    },
    {
      target: `claim on ${r.large.messages} messages < 10 ms`,
      measured: `${msCell(r.large.claimMs)} ms`,
      met: r.large.claimMs.median < 10,
    },
    {
      target: `status on ${r.large.messages} messages < 100 ms`,
      measured: `${msCell(r.large.statusMs)} ms`,
      met: r.large.statusMs.median < 100,
    },
    {
      target: 'prune of 100,000 slows a running worker < 20 %',
      measured: `${Math.round(r.prune.slowdown * 100)} % slower`,
      met: r.prune.slowdown < 0.2,
    },
  );
}
