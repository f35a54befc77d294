import { DEFAULT_BATCH, type WorkSummary, work } from '@onceq/core';
import { getHandler, type HandlerVersion } from '@onceq/handler';
import { expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { resolveHandler } from '../config.ts';
import { plural, toJson } from '../output.ts';

interface WorkArgs {
  handler: HandlerVersion;
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
  parse({ values, positionals, config }) {
    expectPositionals(positionals, [], 'work');
    return {
      handler: resolveHandler(stringFlag(values, 'handler'), config),
      max: intFlag(values, 'max', { min: 1 }),
      leaseSeconds: intFlag(values, 'lease', { min: 1 }),
      batch: intFlag(values, 'batch', { min: 1 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const progress = ctx.progress;
    let summary: WorkSummary;
    try {
      progress?.update(`working with handler ${args.handler}…`);
      summary = await work(store, getHandler(args.handler), {
        ...(args.max === undefined ? {} : { max: args.max }),
        ...(args.batch === undefined ? {} : { batch: args.batch }),
        ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
        onProgress: (s) => progress?.update(`working with handler ${args.handler}… ${describe(s)}`),
      });
    } finally {
      progress?.done();
    }
    if (json) ctx.out(toJson({ handler: args.handler, ...summary }));
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
