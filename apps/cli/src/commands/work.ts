import { DEFAULT_BATCH, type WorkSummary, work } from '@onceq/core';
import type { HandlerVersion } from '@onceq/handler/versions';
import { expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { describeHandler, type HandlerSource, resolveHandlerSource } from '../config.ts';
import { plural, toJson } from '../output.ts';

interface WorkArgs {
  handler: HandlerVersion;
  source: HandlerSource;
  max: number | undefined;
  leaseSeconds: number | undefined;
  batch: number | undefined;
}

export const workCommand = defineCommand<WorkArgs>({
  name: 'work',
  summary: 'claim → handle → apply until nothing is claimable now (or N messages)',
  usage: 'work [--handler v1|v2] [--max N] [--lease S] [--batch N]',
  flags: [
    ['--handler <v1|v2>', 'handler version (default: config "handler", then v1)'],
    ['--max <N>', 'stop after N claimed messages'],
    ['--lease <S>', 'lease length in seconds (default 30)'],
    [
      '--batch <N>',
      `messages per claim and apply transaction (default ${DEFAULT_BATCH}; 1 = per message)`,
    ],
  ],
  options: {
    handler: { type: 'string' },
    max: { type: 'string' },
    lease: { type: 'string' },
    batch: { type: 'string' },
  },
  opensStore: true,
  examples: ['work', 'work --handler v2 --max 10'],
  parse({ values, positionals, config }) {
    expectPositionals(positionals, [], 'work');
    const { version, source } = resolveHandlerSource(stringFlag(values, 'handler'), config);
    return {
      handler: version,
      source,
      max: intFlag(values, 'max', { min: 1 }),
      leaseSeconds: intFlag(values, 'lease', { min: 1 }),
      batch: intFlag(values, 'batch', { min: 1 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const progress = ctx.progress;
    // Which rules decide the money, and why: a handler chosen in setup changes results.
    if (!json) ctx.err(`${describeHandler(args.handler, args.source)}`);
    let summary: WorkSummary;
    let sofar: WorkSummary | undefined;
    const stopListening = ctx.onInterrupt?.(() => {
      progress?.done();
      ctx.err(
        `onceq: interrupted: ${sofar === undefined ? 'nothing finished yet' : `so far ${describe(sofar)}`}; the batch in progress was rolled back and its messages are claimed again once their lease runs out`,
      );
    });
    try {
      progress?.update(`working with handler ${args.handler}…`);
      // The rules (and zod) load only for the commands that run a handler.
      const { getHandler } = await import('@onceq/handler');
      summary = await work(store, getHandler(args.handler), {
        ...(args.max === undefined ? {} : { max: args.max }),
        ...(args.batch === undefined ? {} : { batch: args.batch }),
        ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
        onProgress: (s) => {
          sofar = s;
          progress?.update(`working with handler ${args.handler}… ${describe(s)}`);
        },
      });
    } finally {
      stopListening?.();
      progress?.done();
    }
    if (json) ctx.out(toJson({ handler: args.handler, handler_source: args.source, ...summary }));
    else if (summary.claimed === 0) ctx.out('nothing to claim now');
    else ctx.out(`handler ${args.handler}: ${describe(summary)}`);
    return 0;
  },
});

function describe(s: WorkSummary): string {
  const parts = [`${s.done} done`, `${s.retried} retried`, `${s.dead} dead`];
  if (s.lost > 0) parts.push(`${s.lost} lost`);
  return `claimed ${plural(s.claimed, 'message')}: ${parts.join(', ')}`;
}
