/**
 * A handler module that never returns (`--handler tests/support/handlers/stuck.ts`): it
 * reports on stderr when it starts (`handler-start E0001 g1`) and when its signal aborts
 * (`handler-aborted E0001 <reason>`), and then still never settles. It holds no timer, so
 * a process whose loop has ended can exit around it, unless the payload says
 * `"timer": true`: then it keeps an interval of its own running, ignoring the abort. A
 * payload with `"done": true` is handled at once by v1's rules, so a test can mix quick
 * and stuck messages.
 */
import type { HandlerContext, JsonObject } from '@onceq/core';
import { v1 } from '@onceq/handler';

export const version = 'stuck-test';

export function handle(payload: JsonObject, context: HandlerContext) {
  process.stderr.write(`handler-start ${context.eventId} g${context.generation}\n`);
  if (payload.done === true) return v1(payload, context);
  context.signal.addEventListener('abort', () => {
    const reason = context.signal.reason;
    process.stderr.write(
      `handler-aborted ${context.eventId} ${reason instanceof Error ? reason.message : String(reason)}\n`,
    );
  });
  if (payload.timer === true) setInterval(() => {}, 1000);
  return new Promise<never>(() => {});
}
