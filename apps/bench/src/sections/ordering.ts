/**
 * Ordering keys: ordered against unordered throughput on PostgreSQL (8 worker
 * processes) and SQLite (batch 100), and the claim with messages waiting behind blocked
 * keys on both backends (scenarios/ordering.ts).
 */
import type { SectionContext } from '../context.ts';
import { ID_KINDS, idLabel } from '../ids.ts';
import { TARGETS } from '../options.ts';
import { msCell, rateCell, section, table } from '../report.ts';
import {
  type BlockedClaim,
  type ModePair,
  type OrderingThroughput,
  runBlockedClaim,
  runOrderingThroughput,
} from '../scenarios/ordering.ts';
import { serverCpuReader } from '../server-meter.ts';
import { errorText, fmtRate } from '../util.ts';

export async function orderingSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('ordering')) return;
  // --quick: a smoke test of the section, too small to judge its targets.
  const rounds = opts.quick ? 1 : opts.runs;
  const throughput: OrderingThroughput[] = [];
  const claims: BlockedClaim[] = [];
  const blockedShape = opts.quick
    ? { blocked: 100, behind: 100, free: 1000, limit: 10 }
    : { blocked: 1000, behind: 100, free: 2000, limit: 10 };
  try {
    const serverCpu = pgUrl === null ? null : await serverCpuReader(pgUrl);
    for (const ids of ID_KINDS) {
      if (pgUrl !== null) {
        throughput.push(
          await runOrderingThroughput(
            'pg',
            pgUrl,
            opts.quick
              ? { ids, keys: 100, perKey: 20, workers: 8, batch: 50, rounds }
              : { ids, keys: 1000, perKey: 100, workers: 8, batch: 50, rounds },
            log,
            serverCpu,
          ),
        );
      }
      throughput.push(
        await runOrderingThroughput(
          'sqlite',
          scratch,
          {
            ids,
            keys: 1000,
            perKey: Math.max(1, Math.floor(opts.messages / 1000)),
            workers: 1,
            batch: 100,
            rounds,
          },
          log,
        ),
      );
    }
    for (const backend of pgUrl === null ? (['sqlite'] as const) : (['sqlite', 'pg'] as const)) {
      log(
        `ordering: ${backend}, claims of ${blockedShape.limit} behind ${blockedShape.blocked} blocked keys …`,
      );
      claims.push(
        await runBlockedClaim(
          backend,
          backend === 'pg' ? (pgUrl as string) : scratch,
          blockedShape,
        ),
      );
    }
  } catch (error) {
    log(`ordering skipped: ${errorText(error)}`);
  }
  results.ordering = { throughput, claims };
  if (throughput.length > 0) {
    out.push(
      section(
        'Ordering keys: the same events drained with and without --key-field (event i of key i mod keys, time-ordered and random ids; handler v1; unordered and ordered runs interleaved; msg/s median (min–max); scenarios/ordering.ts)',
      ),
    );
    out.push(
      table(
        [
          'backend',
          'ids',
          'events',
          'keys',
          'workers',
          'batch',
          'unordered msg/s',
          'ordered msg/s',
          'ratio',
          'written B/msg, unordered / ordered',
          'server CPU µs/msg, unordered / ordered',
          'bare protocol: ratio, written',
          'exact',
        ],
        throughput.map((t) => [
          t.backend === 'pg' ? 'PostgreSQL' : 'SQLite',
          idLabel(t.ids),
          fmtRate(t.keys * t.perKey),
          fmtRate(t.keys),
          String(t.workers),
          String(t.batch),
          rateCell(t.unordered),
          rateCell(t.ordered),
          `${(t.ordered.median / t.unordered.median).toFixed(2)}×`,
          pairCell(t.written, fmtRate),
          pairCell(t.serverCpu, (us) => String(Math.round(us))),
          bareCell(t),
          t.exact ? 'yes' : `NO: ${t.errors[0]?.slice(0, 80)}`,
        ]),
      ),
    );
    out.push(
      '',
      "written: on SQLite the bytes the worker handed to write calls per message (the WAL's",
      'pages at each commit, checkpoints, a statement journal spilled to a temporary file); on',
      "PostgreSQL the WAL the server wrote from the workers' start to their end. Unordered",
      'claims take ids in their text order, which is the order each batch stored its rows in,',
      "so a transaction's rows and index entries share pages; with random ids an ordered claim",
      "takes the lowest ids among the keys' heads, and each head, its effect and its key's next",
      'message lie on pages of their own.',
      '',
      "server CPU: every process of the PostgreSQL server, from the workers' release to their",
      "end; on PostgreSQL the server's work, not the workers', is what 8 workers on this",
      "machine's cores wait for.",
      '',
      "bare protocol: bare.ts's statements (the claim in (available_at, event_id) order, the",
      "fenced ACK and the effect) on the same stores, whose schema's trigger releases a key's",
      "next message, without any of onceq's code: its ordered/unordered ratio and how many",
      'times the bytes per message ordered work wrote.',
    );
    for (const t of throughput) {
      const ratio = t.ordered.median / t.unordered.median;
      targets.push({
        target: `${t.backend === 'pg' ? `PostgreSQL, ${t.workers} workers` : `SQLite, batch ${t.batch}`}: ordered ≥ ${TARGETS.orderedVsUnordered}× unordered (${fmtRate(t.keys)} keys × ${fmtRate(t.perKey)}, ${idLabel(t.ids)} ids)`,
        measured: `${ratio.toFixed(2)}× (${fmtRate(t.ordered.median)} vs ${fmtRate(t.unordered.median)} msg/s${physicalWork(t)}${t.bare === null ? '' : `; the bare protocol ${bareRatio(t.bare).toFixed(2)}×`})`,
        met: t.exact && ratio >= TARGETS.orderedVsUnordered,
      });
    }
  }
  if (claims.length > 0) {
    out.push(
      section(
        `Claims behind blocked keys: claimMany(limit ${blockedShape.limit}) with ${fmtRate(blockedShape.blocked)} keys held by a dead head and ${fmtRate(blockedShape.behind)} messages waiting behind each, next to the same claims on a store of only the ready messages; ms per claim, median (min–max)`,
      ),
    );
    out.push(
      table(
        [
          'backend',
          'dead',
          'waiting',
          'ready',
          'claim ms, behind blocked keys',
          'claim ms, reference',
          'only ready ones claimed',
        ],
        claims.map((c) => [
          c.backend === 'pg' ? 'PostgreSQL' : 'SQLite',
          fmtRate(c.stored.dead),
          fmtRate(c.stored.waiting),
          fmtRate(c.stored.ready),
          msCell(c.withBlocked),
          msCell(c.reference),
          c.claimedFree ? 'yes' : 'NO',
        ]),
      ),
    );
    for (const c of claims) {
      targets.push({
        target: `claim with ${fmtRate(c.stored.waiting)} messages waiting behind ${fmtRate(c.stored.dead)} blocked keys < ${TARGETS.blockedClaimMs} ms (${c.backend === 'pg' ? 'PostgreSQL' : 'SQLite'})`,
        measured: `${msCell(c.withBlocked)} ms`,
        met: c.claimedFree && c.withBlocked.median < TARGETS.blockedClaimMs,
      });
    }
  }
}

/** Ordered over unordered, medians. */
function bareRatio(bare: NonNullable<OrderingThroughput['bare']>): number {
  return bare.ordered.median / bare.unordered.median;
}

/** The bare protocol's ratio and written-bytes ratio on SQLite; '–' else. */
function bareCell(t: OrderingThroughput): string {
  if (t.bare === null) return '–';
  const written = pairRatio(t.bare.written);
  return `${bareRatio(t.bare).toFixed(2)}× (${fmtRate(t.bare.ordered.median)} vs ${fmtRate(t.bare.unordered.median)})${written === null ? '' : `, ${written.toFixed(1)}×`}`;
}

/** Ordered over unordered of a per-message figure, or null where unknown. */
function pairRatio(pair: ModePair): number | null {
  const { unordered, ordered } = pair;
  return unordered === null || ordered === null ? null : ordered / unordered;
}

/** A per-message figure, unordered / ordered (and their ratio); '–' where unknown. */
function pairCell(pair: ModePair, format: (value: number) => string): string {
  const ratio = pairRatio(pair);
  if (ratio === null) return '–';
  return `${format(pair.unordered as number)} / ${format(pair.ordered as number)} (${ratio.toFixed(1)}×)`;
}

/** How many times the physical work per message ordered work did, where measured. */
function physicalWork(t: OrderingThroughput): string {
  const written = pairRatio(t.written);
  const cpu = pairRatio(t.serverCpu);
  const parts = [
    ...(written === null ? [] : [`${written.toFixed(2)}× the bytes written`]),
    ...(cpu === null ? [] : [`${cpu.toFixed(2)}× the server CPU`]),
  ];
  return parts.length === 0 ? '' : `; per message ${parts.join(', ')}`;
}
