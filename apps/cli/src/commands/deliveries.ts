import type { Store } from '@onceq/core';
import { printable } from '@onceq/core/internal';
import {
  DELIVERY_STATES,
  type DeliveryState,
  type DeliveryView,
  deliveryCounts,
  type EndpointCounts,
  enableEndpoint,
  listDeliveries,
  redriveDeliveries,
  showDelivery,
} from '@onceq/core/webhooks';
import { boolFlag, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { plural, table, toJson } from '../output.ts';

type DeliveriesArgs =
  | { action: 'list'; state?: DeliveryState; endpoint?: string; limit: number }
  | { action: 'show'; id: string }
  | { action: 'redrive'; ids: string[] | null; endpoint?: string }
  | { action: 'enable'; endpoint: string };

export const deliveriesCommand = defineCommand<DeliveriesArgs>({
  name: 'deliveries',
  summary: 'the outbox: deliveries per endpoint and state, one with its attempts, redrive, enable',
  flags: {
    state: {
      type: 'string',
      value: 'S',
      help: `only deliveries in state S (${DELIVERY_STATES.join(', ')})`,
    },
    endpoint: { type: 'string', value: 'E', help: 'only deliveries to endpoint E' },
    limit: { type: 'string', value: 'N', help: 'list at most N deliveries (default 100)' },
    all: { type: 'boolean', help: 'with redrive: every dead delivery (of --endpoint, if given)' },
  },
  operands: {
    synopsis: '[<webhook-id> | redrive (<webhook-id>… | --all) | enable <endpoint>]',
    help: [
      ['(none)', 'counts per endpoint and state, then the deliveries'],
      ['<webhook-id>', 'one delivery and every attempt logged for it'],
      ['redrive', 'dead deliveries back to pending, sent again under the same webhook-id'],
      ['enable', 'an endpoint a 410 disabled: its waiting deliveries are sent again'],
    ],
  },
  examples: [
    'deliveries --state dead',
    'deliveries E0001:1',
    'deliveries redrive --all --endpoint billing',
  ],
  opensStore: true,
  parse({ values, positionals }) {
    const endpoint = stringFlag(values, 'endpoint');
    const [first, ...rest] = positionals;
    if (first === 'redrive') {
      const all = boolFlag(values, 'all') === true;
      if (all === rest.length > 0) {
        throw new UsageError('deliveries redrive needs webhook ids or --all (not both)');
      }
      return {
        action: 'redrive',
        ids: all ? null : rest,
        ...(endpoint === undefined ? {} : { endpoint }),
      };
    }
    if (first === 'enable') {
      if (rest.length !== 1) throw new UsageError('deliveries enable needs one endpoint name');
      return { action: 'enable', endpoint: rest[0] as string };
    }
    if (first !== undefined) {
      if (rest.length > 0)
        throw new UsageError(
          `deliveries shows one webhook id at a time, got ${positionals.length}`,
        );
      return { action: 'show', id: first };
    }
    const state = stringFlag(values, 'state');
    if (state !== undefined && !(DELIVERY_STATES as readonly string[]).includes(state)) {
      throw new UsageError(
        `--state must be one of ${DELIVERY_STATES.join(', ')}, got ${JSON.stringify(state)}`,
      );
    }
    return {
      action: 'list',
      ...(state === undefined ? {} : { state: state as DeliveryState }),
      ...(endpoint === undefined ? {} : { endpoint }),
      limit: intFlag(values, 'limit', { min: 1, max: 10_000 }) ?? 100,
    };
  },
  async run(args, { store, json, ctx }) {
    if (args.action === 'enable') {
      const was = await enableEndpoint(store, args.endpoint);
      if (json) ctx.out(toJson({ endpoint: args.endpoint, was_disabled: was }));
      else
        ctx.out(
          was
            ? `enabled ${args.endpoint}: its deliveries are sent again`
            : `${args.endpoint} was not disabled`,
        );
      return 0;
    }
    if (args.action === 'redrive') {
      const moved = await redriveDeliveries(
        store,
        args.ids ?? {
          all: true,
          ...(args.endpoint === undefined ? {} : { endpoint: args.endpoint }),
        },
      );
      if (json) ctx.out(toJson({ redriven: moved }));
      else
        ctx.out(
          `redrove ${plural(moved.length, 'delivery', 'deliveries')}${moved.length > 0 ? `: ${moved.join(', ')}` : ''}`,
        );
      return 0;
    }
    if (args.action === 'show') {
      const { delivery, attempts } = await showDelivery(store, args.id);
      if (json) {
        ctx.out(
          toJson({
            ...viewJson(delivery),
            attempt_log: attempts.map((a) => ({
              attempt: a.attempt,
              generation: a.generation,
              at: a.at,
              status: a.status,
              latency_ms: a.latencyMs,
              response: a.response,
              error: a.error,
            })),
          }),
        );
        return 0;
      }
      for (const line of listTable([delivery])) ctx.out(line);
      const rows = attempts.map((a) => [
        a.attempt,
        a.at,
        a.status ?? '-',
        `${a.latencyMs} ms`,
        a.error ?? a.response ?? '',
      ]);
      for (const line of table(
        [['attempt', 'at', 'status', 'latency', 'error / response'], ...rows],
        ['right', 'right', 'right', 'right', 'left'],
      )) {
        ctx.out(line);
      }
      return 0;
    }
    const counts = await deliveryCounts(store);
    const list = await listDeliveries(store, {
      ...(args.state === undefined ? {} : { state: args.state }),
      ...(args.endpoint === undefined ? {} : { endpoint: args.endpoint }),
      limit: args.limit,
    });
    if (json) {
      ctx.out(
        toJson({
          endpoints: countsJson(counts),
          deliveries: list.map(viewJson),
        }),
      );
      return 0;
    }
    if (counts.length === 0) {
      ctx.out('no deliveries');
      return 0;
    }
    const summary = counts.map((c) => [
      c.endpoint,
      c.states.pending,
      c.states.leased,
      c.states.delivered,
      c.states.dead,
      c.attempts,
      c.disabled === null ? '' : `disabled: ${c.disabled.reason}`,
    ]);
    for (const line of table(
      [['endpoint', 'pending', 'leased', 'delivered', 'dead', 'attempts', ''], ...summary],
      ['left', 'right', 'right', 'right', 'right', 'right', 'left'],
    )) {
      ctx.out(line);
    }
    if (list.length > 0) {
      ctx.out('');
      for (const line of listTable(list)) ctx.out(line);
    }
    return 0;
  },
});

/** Per endpoint counts as JSON: the same object in `deliveries --json` and `status --json`. */
export function countsJson(counts: readonly EndpointCounts[]) {
  return counts.map((c) => ({
    endpoint: c.endpoint,
    ...c.states,
    attempts: c.attempts,
    disabled: c.disabled,
  }));
}

/**
 * Dead deliveries for people (nothing when none), as `onceq dlq` and `onceq status` print
 * them: the first ones with their last attempt, and how to send them again.
 */
export function formatDeadDeliveries(total: number, dead: readonly DeliveryView[]): string[] {
  if (total === 0) return [];
  const more = total > dead.length ? `, the first ${dead.length}` : '';
  return [
    '',
    `dead deliveries  ${total}${more} (send again: onceq deliveries redrive <webhook-id>… or --all)`,
    ...table(
      [
        ['webhook_id', 'endpoint', 'attempts', 'last', 'error'],
        ...dead.map((d) => [
          d.webhookId,
          d.endpoint,
          d.attempts,
          d.lastStatus ?? '-',
          printable(d.lastError ?? ''),
        ]),
      ],
      ['left', 'left', 'right', 'right', 'left'],
    ).map((line) => `  ${line}`),
  ];
}

/** The dead deliveries' total and the first `limit` of them. */
export async function deadDeliveries(
  store: Store,
  counts: readonly EndpointCounts[],
  limit: number,
): Promise<{ total: number; dead: DeliveryView[] }> {
  const total = counts.reduce((sum, c) => sum + c.states.dead, 0);
  return { total, dead: total === 0 ? [] : await listDeliveries(store, { state: 'dead', limit }) };
}

export function viewJson(d: DeliveryView) {
  return {
    webhook_id: d.webhookId,
    event_id: d.eventId,
    key: d.key,
    endpoint: d.endpoint,
    state: d.state,
    attempts: d.attempts,
    available_at: d.availableAt,
    last_status: d.lastStatus,
    last_error: d.lastError,
    finished_at: d.finishedAt,
    body_bytes: d.bodyBytes,
  };
}

function listTable(list: readonly DeliveryView[]): string[] {
  return table(
    [
      ['webhook_id', 'endpoint', 'state', 'attempts', 'last', 'error'],
      ...list.map((d) => [
        d.webhookId,
        d.endpoint,
        d.state,
        d.attempts,
        d.lastStatus ?? '-',
        d.lastError ?? '',
      ]),
    ],
    ['left', 'left', 'left', 'right', 'right', 'left'],
  );
}
