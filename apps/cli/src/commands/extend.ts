import { extend } from '@onceq/core';
import { expectPositionals, intFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { toJson } from '../output.ts';
import { GENERATION_FLAG, requireGeneration } from './complete.ts';

interface ExtendArgs {
  eventId: string;
  generation: number;
  leaseSeconds: number | undefined;
}

export const extendCommand = defineCommand<ExtendArgs>({
  name: 'extend',
  summary: 'extend a held lease (a manual heartbeat); exit 4 when the lease is lost',
  operands: { synopsis: '<id>' },
  flags: {
    generation: GENERATION_FLAG,
    lease: {
      type: 'string',
      value: 'S',
      help: 'new lease length from now, in seconds (default 30)',
    },
  },
  examples: ['extend E0001 --generation 2 --lease 60'],
  opensStore: true,
  parse({ values, positionals }) {
    const [eventId] = expectPositionals(positionals, ['<id>'], 'extend') as [string];
    return {
      eventId,
      generation: requireGeneration(intFlag(values, 'generation'), 'extend'),
      leaseSeconds: intFlag(values, 'lease', { min: 1 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const extended = await extend(
      store,
      { eventId: args.eventId, generation: args.generation },
      args.leaseSeconds,
    );
    ctx.out(
      json
        ? toJson({
            event_id: extended.eventId,
            generation: extended.generation,
            lease_until: extended.leaseUntil,
          })
        : `${extended.eventId} generation ${extended.generation}: lease extended until ${extended.leaseUntil}`,
    );
    return 0;
  },
});
