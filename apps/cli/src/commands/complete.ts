import { apply, LeaseLostError, show } from '@onceq/core';
import { printable } from '@onceq/core/internal';
import { expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import type { FlagSpec } from '../flags.ts';
import { chooseHandler, HANDLER_FLAG, type HandlerChoice } from '../handler-choice.ts';
import { humanTime, toJson } from '../output.ts';
import { HANDLER_TIMEOUT_FLAG, handlerTimeoutMs } from './worker.ts';

interface CompleteArgs {
  eventId: string;
  generation: number;
  handler: HandlerChoice;
  /** `--handler-timeout`, seconds. */
  handlerTimeout: number | undefined;
}

/** `--generation G` of the commands that act on a held lease (complete, extend, fail). */
export const GENERATION_FLAG = {
  type: 'string',
  value: 'G',
  required: true,
  help: 'the generation the claim returned (the fencing token)',
} as const satisfies FlagSpec;

export const completeCommand = defineCommand<CompleteArgs>({
  name: 'complete',
  summary: 'run the handler on the stored payload and apply + ACK (or dead on invalid_payload)',
  operands: { synopsis: '<id>' },
  flags: {
    generation: GENERATION_FLAG,
    handler: HANDLER_FLAG,
    'handler-timeout': HANDLER_TIMEOUT_FLAG,
  },
  opensStore: true,
  examples: ['complete E0001 --generation 1', 'complete E0004 --generation 3 --handler v2 --json'],
  async parse({ values, positionals, config, ctx }) {
    const [eventId] = expectPositionals(positionals, ['<id>'], 'complete') as [string];
    return {
      eventId,
      generation: requireGeneration(intFlag(values, 'generation'), 'complete'),
      handler: await chooseHandler(stringFlag(values, 'handler'), config, ctx.cwd),
      handlerTimeout: intFlag(values, 'handler-timeout', { min: 1, max: 86_400 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const now = store.clock();
    const lease = { eventId: args.eventId, generation: args.generation };
    let outcome: Awaited<ReturnType<typeof apply>>;
    try {
      outcome = await apply(
        store,
        lease,
        args.handler.handler,
        undefined,
        handlerTimeoutMs(args.handlerTimeout).handlerTimeoutMs,
      );
    } catch (error) {
      // An unknown id is not a lost lease: say so the way show and redrive do.
      if (error instanceof LeaseLostError) await show(store, args.eventId);
      throw error;
    }
    if (outcome.outcome === 'done' && outcome.effect === null) {
      const { summary } = outcome;
      ctx.out(
        json
          ? toJson({ event_id: outcome.eventId, outcome: 'done', summary })
          : `${outcome.eventId} done: ${summary === null || summary === undefined ? "the handler's own completion" : printable(summary)} (handler ${args.handler.name})`,
      );
    } else if (outcome.outcome === 'done') {
      const { category, amountCents } = outcome.effect;
      ctx.out(
        json
          ? toJson({
              event_id: outcome.eventId,
              outcome: 'done',
              category,
              amount_cents: amountCents,
            })
          : `${outcome.eventId} done: ${printable(category)} ${amountCents} (handler ${args.handler.name})`,
      );
    } else if (outcome.outcome === 'dead') {
      ctx.out(
        json
          ? toJson({
              event_id: outcome.eventId,
              outcome: 'dead',
              code: outcome.code,
              detail: outcome.detail,
            })
          : `${outcome.eventId} went to the DLQ: ${printable(outcome.code)}: ${printable(outcome.detail)} (handler ${args.handler.name})`,
      );
    } else {
      ctx.out(
        json
          ? toJson({
              event_id: outcome.eventId,
              outcome: 'retry',
              code: outcome.code,
              detail: outcome.detail,
              available_at: outcome.availableAt,
            })
          : `${outcome.eventId} failed temporarily (${outcome.code}); ready again at ${humanTime(outcome.availableAt, now)}`,
      );
    }
    return 0;
  },
});

export function requireGeneration(generation: number | undefined, where: string): number {
  if (generation === undefined) {
    throw new UsageError(`${where} needs --generation G (the generation the claim returned)`);
  }
  return generation;
}
