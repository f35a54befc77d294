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
    const summary: WorkSummary = { claimed: 0, done: 0, retried: 0, dead: 0, lost: 0 };
    // Ctrl-C is handled between chunks of work (the listener runs when the event loop
    // turns, which a run of SQLite transactions never lets it do): no transaction is
    // open then, so the summary so far is exact and nothing is half done.
    const stopListening = ctx.onInterrupt?.(() => {
      progress?.done();
      ctx.err(
        `onceq: interrupted: ${summary.claimed === 0 ? 'nothing was claimed' : `so far ${describe(summary)}`}; stopped between transactions, nothing is half done`,
      );
    });
    // Which rules decide the money, and why: a handler chosen in setup changes results.
    // Said after the Ctrl-C listener is in place, so an interrupt right after it is answered.
    if (!json) ctx.err(`${describeHandler(args.handler, args.source)}`);
    const chunk = (args.batch ?? DEFAULT_BATCH) * WORK_CHUNK_BATCHES;
    try {
      progress?.update(`working with handler ${args.handler}…`);
      // The rules (and zod) load only for the commands that run a handler.
      const { getHandler } = await import('@onceq/handler');
      const handler = getHandler(args.handler);
      for (;;) {
        const left = args.max === undefined ? chunk : Math.min(chunk, args.max - summary.claimed);
        const part = await work(store, handler, {
          max: left,
          ...(args.batch === undefined ? {} : { batch: args.batch }),
          ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
          onProgress: (s) => {
            progress?.update(`working with handler ${args.handler}… ${describe(add(summary, s))}`);
          },
        });
        Object.assign(summary, add(summary, part));
        // Fewer than asked: nothing is claimable now. Or the --max is reached.
        if (part.claimed < left || summary.claimed === args.max) break;
        await new Promise((resolve) => setTimeout(resolve, 0)); // let a Ctrl-C in
      }
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

/** Messages per call of core's work loop: Ctrl-C is answered between two calls. */
const WORK_CHUNK_BATCHES = 5;

function add(a: WorkSummary, b: Readonly<WorkSummary>): WorkSummary {
  return {
    claimed: a.claimed + b.claimed,
    done: a.done + b.done,
    retried: a.retried + b.retried,
    dead: a.dead + b.dead,
    lost: a.lost + b.lost,
  };
}

function describe(s: WorkSummary): string {
  const parts = [`${s.done} done`, `${s.retried} retried`, `${s.dead} dead`];
  if (s.lost > 0) parts.push(`${s.lost} lost`);
  return `claimed ${plural(s.claimed, 'message')}: ${parts.join(', ')}`;
}
