import { dlq } from '@onceq/core';
import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';
import { plural, RawJson, table, toJson } from '../output.ts';

export const dlqCommand = defineCommand<null>({
  name: 'dlq',
  summary: 'dead messages: id, attempts, generation, last error, the original payload',
  usage: 'dlq',
  flags: [],
  options: {},
  opensStore: true,
  parse({ positionals }) {
    expectPositionals(positionals, [], 'dlq');
    return null;
  },
  async run(_args, { store, json, ctx }) {
    const dead = await dlq(store);
    if (json) {
      ctx.out(
        toJson(
          dead.map((m) => ({
            event_id: m.eventId,
            attempts: m.attempts,
            generation: m.generation,
            last_error: m.lastErrorCode,
            last_error_detail: m.lastErrorDetail,
            // dlq() leaves pruned messages out: the payload is always there.
            payload: new RawJson(m.payloadText ?? 'null'),
          })),
        ),
      );
      return 0;
    }
    if (dead.length === 0) {
      ctx.out('the DLQ is empty');
      return 0;
    }
    ctx.out(`${plural(dead.length, 'dead message')}:`);
    const rows = table(
      [
        ['event_id', 'attempts', 'generation', 'last_error', 'payload'],
        ...dead.map((m) => [
          m.eventId,
          m.attempts,
          m.generation,
          m.lastErrorCode ?? '-',
          m.payloadText ?? '-',
        ]),
      ],
      ['left', 'right', 'right', 'left', 'left'],
    );
    for (const line of rows) ctx.out(line);
    for (const m of dead) if (m.lastErrorDetail) ctx.out(`${m.eventId}: ${m.lastErrorDetail}`);
    return 0;
  },
});
