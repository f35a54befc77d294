import type { MessageView } from '@onceq/core';
import { dlq } from '@onceq/core';
import { blockedKeys, countDlq, MAX_PAGE } from '@onceq/core/admin';
import { DEFAULT_QUEUE, printable } from '@onceq/core/internal';
import { deliveryCounts } from '@onceq/core/webhooks';
import { expectPositionals, intFlag, queueFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import type { Context } from '../context.ts';
import { plural, RawJson, table, toJson, truncate } from '../output.ts';
import { deadDeliveries, formatDeadDeliveries, viewJson } from './deliveries.ts';
import { formatBlocked } from './status.ts';

interface DlqArgs {
  limit: number | undefined;
  queue: string | undefined;
}

export const dlqCommand = defineCommand<DlqArgs>({
  name: 'dlq',
  summary:
    'dead messages: id, attempts, generation, last error, the original payload; then dead deliveries (--json: those with a webhook_id)',
  flags: {
    limit: {
      type: 'string',
      value: 'N',
      help: `show at most N dead messages, 1 to ${MAX_PAGE} (default: all)`,
    },
    queue: {
      type: 'string',
      value: 'NAME',
      help: 'only the dead messages and blocked keys of this queue (no dead deliveries)',
    },
  },
  opensStore: true,
  readOnly: true,
  examples: ['dlq', 'dlq --limit 20 --json', 'dlq --queue payments'],
  parse({ positionals, values }) {
    expectPositionals(positionals, [], 'dlq');
    return {
      limit: intFlag(values, 'limit', { min: 1, max: MAX_PAGE }),
      queue: queueFlag(values),
    };
  },
  async run({ limit, queue }, { store, json, ctx }) {
    // With --limit only the first page is read (by event id, like the full list), plus a
    // count of the same set: dead and not pruned.
    const dead = await dlq(store, { limit, queue });
    const total = limit === undefined ? dead.length : await countDlq(store, { queue });
    // Deliveries are the store's, by endpoint: listed for the whole store only, after
    // the dead messages: the first --limit of them (without it, all in --json, the first
    // 100 for people).
    const endpoints = queue === undefined ? await deliveryCounts(store) : [];
    const deadTotal = endpoints.reduce((sum, c) => sum + c.states.dead, 0);
    const shown = limit ?? (json ? Math.max(1, deadTotal) : 100);
    const deliveries = await deadDeliveries(store, endpoints, shown);
    if (json) {
      ctx.out(
        toJson([
          ...dead.map((m) => ({
            event_id: m.eventId,
            ...(m.queue === DEFAULT_QUEUE ? {} : { queue: m.queue }),
            ...(m.key === null ? {} : { key: m.key }),
            attempts: m.attempts,
            generation: m.generation,
            last_error_code: m.lastErrorCode,
            last_error_detail: m.lastErrorDetail,
            payload: new RawJson(m.payloadText ?? 'null'),
          })),
          // A dead delivery is told apart by its webhook_id (its event is done).
          ...deliveries.dead.map(viewJson),
        ]),
      );
      return 0;
    }
    if (dead.length === 0 && deliveries.total === 0) {
      ctx.out(queue === undefined ? 'the DLQ is empty' : `no dead messages in queue ${queue}`);
      return 0;
    }
    if (dead.length === 0) ctx.out('no dead messages');
    else {
      ctx.out(
        dead.length < total
          ? `${plural(total, 'dead message')}, the first ${dead.length} (--limit):`
          : `${plural(dead.length, 'dead message')}:`,
      );
      printDeadTable(dead, ctx);
      for (const m of dead) {
        if (m.lastErrorDetail) ctx.out(`${m.eventId}: ${printable(m.lastErrorDetail)}`);
      }
      for (const line of formatBlocked(await blockedKeys(store, { limit: 10, queue })))
        ctx.out(line);
    }
    for (const line of formatDeadDeliveries(deliveries.total, deliveries.dead)) ctx.out(line);
    return 0;
  },
});

function printDeadTable(dead: readonly MessageView[], ctx: Context): void {
  const rows = table(
    [
      ['event_id', 'attempts', 'generation', 'last_error', 'payload'],
      ...dead.map((m) => [
        m.eventId,
        m.attempts,
        m.generation,
        m.lastErrorCode ?? '-',
        truncate(m.payloadText ?? ''),
      ]),
    ],
    ['left', 'right', 'right', 'left', 'left'],
  );
  for (const line of rows) ctx.out(line);
}
