import type { MessageView } from '@onceq/core';
import { show } from '@onceq/core';
import { DEFAULT_QUEUE } from '@onceq/core/internal';
import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';
import { humanTime, RawJson, table, toJson } from '../output.ts';

export const showCommand = defineCommand<string>({
  name: 'show',
  summary: 'one message in full, with its effect if any',
  operands: { synopsis: '<id>' },
  flags: {},
  opensStore: true,
  readOnly: true,
  examples: ['show E0004', 'show E0004 --json'],
  parse({ positionals }) {
    return expectPositionals(positionals, ['<id>'], 'show')[0] as string;
  },
  async run(eventId, { store, json, ctx }) {
    const view = await show(store, eventId);
    if (json) ctx.out(toJson(messageJson(view)));
    else for (const line of formatMessage(view, store.clock())) ctx.out(line);
    return 0;
  },
});

/** A message as JSON; the payload is the stored canonical text, embedded as is. */
export function messageJson(view: MessageView): Record<string, unknown> {
  return {
    event_id: view.eventId,
    ...(view.queue === DEFAULT_QUEUE ? {} : { queue: view.queue }),
    ...(view.key === null ? {} : { key: view.key }),
    state: view.state,
    attempts: view.attempts,
    generation: view.generation,
    available_at: view.availableAt,
    lease_until: view.leaseUntil,
    last_error_code: view.lastErrorCode,
    last_error_detail: view.lastErrorDetail,
    enqueued_at: view.enqueuedAt,
    updated_at: view.updatedAt,
    payload: view.payloadText === null ? null : new RawJson(view.payloadText),
    ...(view.prunedAt === null
      ? {}
      : { pruned_at: view.prunedAt, payload_sha256: view.payloadSha256 }),
    effect:
      view.effect === null
        ? null
        : { category: view.effect.category, amount_cents: view.effect.amountCents },
    ...(view.completion === null ? {} : { completion: { summary: view.completion.summary } }),
  };
}

/** Times in local time and relative to now; `--json` keeps the epoch seconds. */
function formatMessage(view: MessageView, now: number): string[] {
  const dash = (value: string | number | null) => (value === null ? '-' : String(value));
  const time = (value: number | null) => (value === null ? '-' : humanTime(value, now));
  return table([
    ['event_id', view.eventId],
    ...(view.queue === DEFAULT_QUEUE ? [] : [['queue', view.queue]]),
    ...(view.key === null ? [] : [['key', view.key]]),
    ['state', view.state],
    ['attempts', view.attempts],
    ['generation', view.generation],
    ['available_at', time(view.availableAt)],
    ['lease_until', time(view.leaseUntil)],
    ['last_error', dash(view.lastErrorCode)],
    ['last_error_detail', dash(view.lastErrorDetail)],
    ['enqueued_at', time(view.enqueuedAt)],
    ['updated_at', time(view.updatedAt)],
    [
      'payload',
      view.payloadText ?? `(pruned at ${time(view.prunedAt)}, sha256 ${view.payloadSha256})`,
    ],
    ['effect', view.effect === null ? '-' : `${view.effect.category} ${view.effect.amountCents}`],
    // A handler's own completion: its rows live in the user's tables, onceq keeps the summary.
    ...(view.completion === null
      ? []
      : [['completion', view.completion.summary ?? "(the handler's own rows, no summary)"]]),
  ]);
}
