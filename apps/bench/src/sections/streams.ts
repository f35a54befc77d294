/** Real event streams: general ids at enqueue, a store of 1,000,000 messages, prune under load. */
import type { SectionContext } from '../context.ts';
import { msCell, rateCell, section, table } from '../report.ts';
import { runStreams } from '../scenarios/streams.ts';
import { type LargeResult, runPgLarge } from '../scenarios/streams-pg.ts';
import { errorText, fmtRate } from '../util.ts';

export async function streamsSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('streams')) return;
  log('streams (general ids, 1,000,000 messages, prune under load) …');
  const r = await runStreams(scratch, {
    messages: opts.quick ? 100_000 : 1_000_000,
    repeats: opts.runs,
    readyForPrune: opts.quick ? 60_000 : 300_000,
    log,
  });
  let pg: LargeResult | null = null;
  if (pgUrl !== null) {
    log(`streams: ${r.large.messages} messages on PostgreSQL …`);
    try {
      pg = await runPgLarge(pgUrl, r.large.messages, opts.runs);
      log(
        `  built in ${Math.round(pg.buildMs)} ms; claim ${pg.claimMs.median.toFixed(2)} ms, status ${pg.statusMs.median.toFixed(1)} ms`,
      );
    } catch (error) {
      log(`PostgreSQL streams skipped: ${errorText(error)}`);
    }
  }
  results.streams = { ...r, pg };
  out.push(
    section(
      `Streams: UUID ids, a store of ${r.large.messages} messages (SQLite FULL and PostgreSQL), prune under load (SQLite FULL)`,
    ),
  );
  out.push(
    table(
      ['measure', 'value'],
      [
        ['enqueue, lesson ids (lines/s)', rateCell(r.enqueue.lessonRate)],
        ['enqueue, random UUIDv4 ids, general (lines/s)', rateCell(r.enqueue.generalRate)],
        ['enqueue, time-ordered 36-char ids, general (lines/s)', rateCell(r.enqueue.orderedRate)],
        [`SQLite: build ${r.large.messages} messages (ms)`, String(Math.round(r.large.buildMs))],
        ['SQLite: claim (ms)', msCell(r.large.claimMs)],
        ['SQLite: status (ms)', msCell(r.large.statusMs)],
        ...(pg === null
          ? []
          : [
              [
                `PostgreSQL: build ${pg.messages} messages + ANALYZE (ms)`,
                String(Math.round(pg.buildMs)),
              ],
              ['PostgreSQL: claim (ms)', msCell(pg.claimMs)],
              ['PostgreSQL: status (ms)', msCell(pg.statusMs)],
            ]),
        [`prune ${r.prune.pruned} done, duty cycle 0.1 (ms)`, String(Math.round(r.prune.pruneMs))],
        [
          'worker alone / during prune (msg/s)',
          `${fmtRate(r.prune.baselineRate)} / ${fmtRate(r.prune.duringRate)} (over ${Math.round(r.prune.overlapMs / 1000)} s of the prune)${r.prune.valid ? '' : ', not valid'}`,
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
    ...[
      ['SQLite', r.large] as const,
      ...(pg === null ? [] : [['PostgreSQL', pg] as const]),
    ].flatMap(([backend, large]) => [
      {
        target: `claim on ${large.messages} messages < 10 ms (${backend}, UUID ids)`,
        measured: `${msCell(large.claimMs)} ms`,
        met: large.claimMs.median < 10,
      },
      {
        target: `status on ${large.messages} messages < 100 ms (${backend}, UUID ids)`,
        measured: `${msCell(large.statusMs)} ms`,
        met: large.statusMs.median < 100,
      },
    ]),
    {
      target: 'prune of 100,000 slows a running worker < 20 % (SQLite FULL)',
      measured: `${(r.prune.duringRate / r.prune.baselineRate).toFixed(2)}× the rate alone (${r.prune.slowdown > 0 ? `${Math.round(r.prune.slowdown * 100)} % slower` : 'no slower'})${r.prune.valid ? '' : ' (not valid: under 3 s of overlap)'}`,
      met: r.prune.valid && r.prune.slowdown < 0.2,
    },
  );
}
