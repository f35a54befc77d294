import type { MessageState } from '@onceq/core';
import { isMessageState, listMessages, MAX_PAGE, MESSAGE_STATES } from '@onceq/core/admin';
import { expectPositionals, intFlag, queueFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { humanTime, table, toJson, truncate } from '../output.ts';
import { messageJson } from './show.ts';

interface ListArgs {
  state: MessageState | undefined;
  queue: string | undefined;
  limit: number;
  after: string | undefined;
}

/** Rows per page when `--limit` is not given. */
const DEFAULT_LIMIT = 50;

export const listCommand = defineCommand<ListArgs>({
  name: 'list',
  summary: 'messages page by page, by event id, optionally of one state',
  flags: {
    state: {
      type: 'string',
      value: 'S',
      help: `only messages in this state: ${MESSAGE_STATES.join(', ')}`,
    },
    queue: {
      type: 'string',
      value: 'NAME',
      help: 'only messages of this queue',
    },
    limit: {
      type: 'string',
      value: 'N',
      help: `page size, 1 to ${MAX_PAGE} (default ${DEFAULT_LIMIT})`,
    },
    after: {
      type: 'string',
      value: 'ID',
      help: 'start after this event id (the "next" of the previous page)',
    },
  },
  opensStore: true,
  readOnly: true,
  examples: [
    'list --state ready --limit 20',
    'list --queue payments --state dead',
    'list --after E0020 --json',
  ],
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'list');
    const state = stringFlag(values, 'state');
    if (state !== undefined && !isMessageState(state)) {
      throw new UsageError(
        `--state must be one of ${MESSAGE_STATES.join(', ')}, got ${JSON.stringify(state)}`,
      );
    }
    const queue = queueFlag(values);
    return {
      state,
      queue,
      limit: intFlag(values, 'limit', { min: 1, max: MAX_PAGE }) ?? DEFAULT_LIMIT,
      after: stringFlag(values, 'after'),
    };
  },
  async run(args, { store, json, ctx }) {
    const page = await listMessages(store, {
      limit: args.limit,
      ...(args.state === undefined ? {} : { state: args.state }),
      ...(args.queue === undefined ? {} : { queue: args.queue }),
      ...(args.after === undefined ? {} : { after: args.after }),
    });
    if (json) {
      ctx.out(toJson({ messages: page.messages.map(messageJson), next: page.next }));
      return 0;
    }
    if (page.messages.length === 0) {
      ctx.out(args.after === undefined ? 'no messages' : `no messages after ${args.after}`);
      return 0;
    }
    const now = store.clock();
    const rows = table([
      ['event_id', 'state', 'attempts', 'updated', 'payload'],
      ...page.messages.map((m) => [
        m.eventId,
        m.state,
        m.attempts,
        humanTime(m.updatedAt, now),
        m.payloadText === null ? '(pruned)' : truncate(m.payloadText),
      ]),
    ]);
    for (const line of rows) ctx.out(line);
    if (page.next !== null) {
      const state = args.state === undefined ? '' : ` --state ${args.state}`;
      const queue = args.queue === undefined ? '' : ` --queue ${args.queue}`;
      ctx.out(`more: onceq list${state}${queue} --limit ${args.limit} --after ${page.next}`);
    }
    return 0;
  },
});
