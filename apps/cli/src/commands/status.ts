import type { StateCounts, StatusReport } from '@onceq/core';
import {
  type BlockedKeys,
  blockedKeys,
  countsByQueue,
  forgottenBefore,
  MESSAGE_STATES,
  type QueueSnapshot,
  queueSnapshot,
  reportedStates,
  storageUse,
} from '@onceq/core/admin';
import { DEFAULT_QUEUE, printable } from '@onceq/core/internal';
import { deliveryCounts, type EndpointCounts } from '@onceq/core/webhooks';
import { expectPositionals, queueFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { humanTime, table, toJson } from '../output.ts';
import { countsJson, deadDeliveries, formatDeadDeliveries, viewJson } from './deliveries.ts';

export const statusCommand = defineCommand<{ queue: string | undefined }>({
  name: 'status',
  summary: 'counts by state (and by queue), effects, totals by category',
  flags: {
    queue: {
      type: 'string',
      value: 'NAME',
      help: 'only this queue: its messages, their effects, its ages and blocked keys',
    },
  },
  opensStore: true,
  readOnly: true,
  examples: ['status', 'status --queue payments', 'status --json --db ./other.db'],
  parse({ positionals, values }) {
    expectPositionals(positionals, [], 'status');
    return { queue: queueFlag(values) };
  },
  async run({ queue }, { store, json, ctx }) {
    const snapshot = await queueSnapshot(store, queue === undefined ? {} : { queue });
    const { report } = snapshot;
    const ages = queueAges(snapshot);
    const blocked = await blockedKeys(store, { limit: 10, queue });
    // Deliveries are the store's, by endpoint: shown for the whole store only.
    const endpoints = queue === undefined ? await deliveryCounts(store) : [];
    const deliveries = await deadDeliveries(store, endpoints, 10);
    // Per queue only for a store with more than `default`: a store of one queue prints
    // what it always printed.
    const byQueue = queue === undefined ? await countsByQueue(store) : {};
    const queues = Object.keys(byQueue).some((q) => q !== DEFAULT_QUEUE) ? byQueue : null;
    if (json) {
      // The store's, with or without --queue: what the file or the tables hold.
      const storage = await storageUse(store);
      ctx.out(
        toJson({
          ...(queue === undefined ? {} : { queue }),
          ...report,
          ...(queues === null ? {} : { queues }),
          ...(blocked.count === 0 ? {} : { blocked_keys: blockedJson(blocked) }),
          // Only a store with deliveries: the document of one without is unchanged.
          ...(endpoints.length === 0
            ? {}
            : {
                deliveries: {
                  endpoints: countsJson(endpoints),
                  dead: { count: deliveries.total, first: deliveries.dead.map(viewJson) },
                },
              }),
          // Times, not ages: the same store prints the same document whenever it is read.
          oldest_ready_at: snapshot.oldestReadyAt,
          next_due_at: snapshot.nextDueAt,
          oldest_dead_at: snapshot.oldestDeadAt,
          store: { kind: store.kind, location: store.location },
          storage: {
            bytes: storage.bytes,
            events: storage.events,
            bytes_per_event: storage.bytesPerEvent,
            live_events: storage.live,
            pruned_events: storage.pruned,
            payload_bytes: storage.payloadBytes,
            bytes_per_live_event: storage.bytesPerLiveEvent,
            bytes_per_pruned_event: storage.bytesPerPrunedEvent,
            forgotten_before: await forgottenBefore(store),
          },
        }),
      );
    } else {
      for (const line of formatStatus(report, `${store.location} (${store.kind})`, queue)) {
        ctx.out(line);
      }
      if (queues !== null) for (const line of formatQueues(queues)) ctx.out(line);
      // Nothing claimable now but a message in backoff: when it is due, not a bare dash.
      ctx.out(
        ages.ready === null && snapshot.nextDueAt !== null
          ? `oldest ready  none claimable now; next due ${humanTime(snapshot.nextDueAt, snapshot.now)}`
          : `oldest ready  ${formatAge(ages.ready)}`,
      );
      ctx.out(`oldest dead   ${formatAge(ages.dead)}`);
      for (const line of formatBlocked(blocked)) ctx.out(line);
      for (const line of formatEndpoints(endpoints)) ctx.out(line);
      for (const line of formatDeadDeliveries(deliveries.total, deliveries.dead)) ctx.out(line);
    }
    return 0;
  },
});

/** Seconds the oldest claimable message has waited and the oldest dead one has lain there. */
export function queueAges(s: QueueSnapshot): { ready: number | null; dead: number | null } {
  const age = (t: number | null) => (t === null ? null : Math.max(0, s.now - t));
  return { ready: age(s.oldestReadyAt), dead: age(s.oldestDeadAt) };
}

function formatAge(seconds: number | null): string {
  return seconds === null ? '-' : `${seconds} s`;
}

/**
 * The status for people: counts by state, then money by category, aligned.
 * Stored values only: an expired lease counts as leased until the next claim recovers it.
 */
export function formatStatus(report: StatusReport, location?: string, queue?: string): string[] {
  const lines: string[] = [];
  if (location !== undefined) lines.push(`store  ${location}`);
  if (queue !== undefined) lines.push(`queue  ${queue}`);
  if (location !== undefined || queue !== undefined) lines.push('');
  const states = reportedStates(report.messages);
  const messages = states.reduce((sum, state) => sum + (report.messages[state] ?? 0), 0);
  lines.push(
    ...table(
      [
        ['state', 'messages'],
        ...states.map((state) => [state, report.messages[state] ?? 0]),
        ['total', messages],
      ],
      ['left', 'right'],
    ),
  );
  lines.push('');
  lines.push(
    ...table(
      [['category', 'amount_cents'], ...Object.entries(report.totals), ['total', report.total]],
      ['left', 'right'],
    ),
  );
  lines.push('', `effects  ${report.effects}`);
  // Every done message has one recorded outcome: a money effect or a completion of the
  // handler's own, whose rows (and amounts) live in the user's tables, not in the totals.
  const completions = report.messages.done - report.effects;
  if (completions > 0)
    lines.push(`completions  ${completions} (the handler's own rows; not in the totals)`);
  return lines;
}

/** Messages by queue and state for people: one row per queue, the states any queue has. */
export function formatQueues(queues: Record<string, StateCounts>): string[] {
  const counts = Object.values(queues);
  const states = MESSAGE_STATES.filter((s) => counts.some((c) => c[s] !== undefined));
  const total = (c: StateCounts) => states.reduce((sum, s) => sum + (c[s] ?? 0), 0);
  return [
    '',
    ...table(
      [
        ['queue', ...states, 'total'],
        ...Object.entries(queues).map(([name, c]) => [
          name,
          ...states.map((s) => c[s] ?? 0),
          total(c),
        ]),
      ],
      ['left', ...states.map(() => 'right' as const), 'right'],
    ),
  ];
}

/** The blocked keys as JSON: how many, and the first ones with their dead heads. */
export function blockedJson(blocked: BlockedKeys) {
  return {
    count: blocked.count,
    keys: blocked.keys.map((k) => ({
      queue: k.queue,
      key: k.key,
      dead_head: k.eventId,
      dead_since: k.deadSince,
      waiting: k.waiting,
    })),
  };
}

/**
 * Ordering keys held by a dead head, for people (nothing when none): each waits for
 * `onceq redrive` (the key resumes in order) or `onceq skip`.
 */
export function formatBlocked(blocked: BlockedKeys): string[] {
  if (blocked.count === 0) return [];
  const more = blocked.count > blocked.keys.length ? `, the first ${blocked.keys.length}` : '';
  return [
    '',
    `blocked keys  ${blocked.count}${more} (a dead head holds each key: redrive or skip it)`,
    ...table(
      [
        ['queue', 'key', 'dead head', 'waiting'],
        ...blocked.keys.map((k) => [k.queue, printable(k.key), k.eventId, k.waiting]),
      ],
      ['left', 'left', 'left', 'right'],
    ).map((line) => `  ${line}`),
  ];
}

/** Deliveries per endpoint for people (nothing for a store without any). */
function formatEndpoints(counts: readonly EndpointCounts[]): string[] {
  if (counts.length === 0) return [];
  return [
    '',
    ...table(
      [
        ['endpoint', 'pending', 'leased', 'delivered', 'dead', ''],
        ...counts.map((c) => [
          c.endpoint,
          c.states.pending,
          c.states.leased,
          c.states.delivered,
          c.states.dead,
          c.disabled === null ? '' : `disabled: ${c.disabled.reason}`,
        ]),
      ],
      ['left', 'right', 'right', 'right', 'right', 'left'],
    ),
  ];
}
