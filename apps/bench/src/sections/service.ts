/** The long-running worker: throughput vs `work --batch`, concurrency, wake-up, idle CPU. */
import type { SectionContext } from '../context.ts';
import { measureService } from '../scenarios/service.ts';

export async function serviceSection(ctx: SectionContext): Promise<void> {
  const { opts, scratch, pgUrl, out, targets, results, log } = ctx;
  if (!opts.only.has('service')) return;
  const n = Math.min(opts.messages, opts.quick ? 1000 : 5000);
  const service = await measureService(scratch, pgUrl, n, log);
  results.service = service.results;
  out.push(...service.lines);
  targets.push(...service.targets);
}
