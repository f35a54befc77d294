/**
 * The ordered kill storm's handler (`--handler tests/support/handlers/ordered.ts`): each
 * message becomes one row `applied (key, seq, event_id)` of its own, inserted by onceq
 * with the ACK (the table, with an increasing `id` in commit order, is the test's to
 * create). A payload with `fail: 'permanent'` is refused for good (a dead head that
 * blocks its key); `fail: 'temporary'` fails its first attempt (a retry that holds its
 * key back). No onceq code is imported at run time: failures carry the brand.
 */
import type { Completion, HandlerContext, JsonObject } from '@onceq/core';

export const version = 'ordered-test';

const FAILURE = Symbol.for('onceq.failure');

export async function handle(payload: JsonObject, context: HandlerContext): Promise<Completion> {
  if (payload.fail === 'permanent') {
    throw { [FAILURE]: 'permanent', code: 'poison', message: `${context.eventId} is refused` };
  }
  if (payload.fail === 'temporary' && context.attempt === 1) {
    throw { [FAILURE]: 'temporary', code: 'flaky', message: `${context.eventId}: try again` };
  }
  // A moment of work, so a SIGKILL can land while leases are live.
  await Bun.sleep(Number(payload.work_ms ?? 0));
  return {
    insert: {
      applied: { key: String(payload.key), seq: Number(payload.seq), event_id: context.eventId },
    },
    summary: `${String(payload.key)} #${String(payload.seq)}`,
  };
}
