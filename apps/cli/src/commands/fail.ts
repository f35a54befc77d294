import type { FailureKind } from '@onceq/core';
import { fail } from '@onceq/core';
import { boolFlag, expectPositionals, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { humanTime, toJson } from '../output.ts';
import { GENERATION_FLAG, requireGeneration } from './complete.ts';

/** The error code recorded when `--code` is not given. */
export const DEFAULT_FAIL_CODE = 'manual';

interface FailArgs {
  eventId: string;
  generation: number;
  kind: FailureKind;
  code: string;
  detail: string | undefined;
}

export const failCommand = defineCommand<FailArgs>({
  name: 'fail',
  summary: 'report a failure for a claimed message',
  operands: { synopsis: '<id>' },
  flags: {
    generation: GENERATION_FLAG,
    temporary: {
      type: 'boolean',
      help: 'retry after backoff (1 s, then 2 s); dead after the last attempt (this or --permanent)',
    },
    permanent: { type: 'boolean', help: 'straight to the DLQ (this or --temporary)' },
    code: {
      type: 'string',
      value: 'C',
      help: `error code to record (default: ${DEFAULT_FAIL_CODE})`,
    },
    detail: { type: 'string', value: 'D', help: 'a short description to record' },
  },
  opensStore: true,
  existingStore: true,
  examples: [
    'fail E0002 --generation 1 --temporary --code upstream_down',
    'fail E0002 --generation 2 --permanent --detail "bad data"',
  ],
  parse({ values, positionals }) {
    const [eventId] = expectPositionals(positionals, ['<id>'], 'fail') as [string];
    const temporary = boolFlag(values, 'temporary') === true;
    const permanent = boolFlag(values, 'permanent') === true;
    if (temporary === permanent) {
      throw new UsageError('fail needs exactly one of --temporary or --permanent');
    }
    const code = stringFlag(values, 'code') ?? DEFAULT_FAIL_CODE;
    if (!/^[a-z0-9_.-]{1,64}$/i.test(code)) {
      throw new UsageError(
        `--code must be 1-64 letters, digits, _ . or -, got ${JSON.stringify(code)}`,
      );
    }
    return {
      eventId,
      generation: requireGeneration(intFlag(values, 'generation'), 'fail'),
      kind: temporary ? 'temporary' : 'permanent',
      code,
      detail: stringFlag(values, 'detail'),
    };
  },
  async run(args, { store, json, ctx }) {
    const now = store.clock();
    const result = await fail(
      store,
      { eventId: args.eventId, generation: args.generation },
      {
        kind: args.kind,
        code: args.code,
        ...(args.detail === undefined ? {} : { detail: args.detail }),
      },
    );
    if (json) {
      ctx.out(
        toJson({
          event_id: result.eventId,
          state: result.state,
          available_at: result.state === 'ready' ? result.availableAt : null,
        }),
      );
    } else if (result.state === 'ready') {
      ctx.out(
        `${result.eventId} failed (${args.kind}, ${args.code}): ready again at ${humanTime(result.availableAt, now)}`,
      );
    } else {
      ctx.out(`${result.eventId} failed (${args.kind}, ${args.code}): moved to the DLQ`);
    }
    return 0;
  },
});
