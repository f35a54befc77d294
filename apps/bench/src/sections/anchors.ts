/** onceq next to plainjob, graphile-worker and pg-boss (see anchors/). */
import { anchorsTable, runAnchors } from '../anchors/index.ts';
import { ANCHORS } from '../anchors/specs.ts';
import type { SectionContext } from '../context.ts';
import { section } from '../report.ts';

export async function anchorsSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, results, log } = ctx;
  if (opts.only.has('anchors')) {
    log('anchors: onceq next to plainjob, graphile-worker and pg-boss …');
    const rows = await runAnchors({
      scratch,
      pgUrl,
      runs: opts.runs,
      quick: opts.quick,
      keys: opts.anchorKeys,
      log,
    });
    results.anchors = { queues: ANCHORS, rows };
    out.push(
      section(
        `Anchors: the same payloads through onceq and the queues people use, ${opts.runs} run(s) each, round-robin`,
      ),
    );
    out.push(anchorsTable(rows));
    out.push(
      `\n${ANCHORS.map((a) => `${a.name} ${a.version}: ${a.settings}; writes ${a.writes}`).join('\n')}`,
    );
  }
}
