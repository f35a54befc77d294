/**
 * A handler module for the worker tests (`--handler tests/support/handlers/slow.ts`):
 * v1's rules, after sleeping `sleep_ms` from the payload (0 when absent), or after the
 * file named by `gate` exists (the test opens the gate once it has seen what it waits
 * for: no duration to guess). It reports on
 * stderr when it starts (`handler-start E0001 g1`), when its signal aborts
 * (`handler-aborted E0001`) and when it returns (`handler-end E0001`). It does not stop
 * when aborted: it returns its effect 200 ms later, so the test sees that late ACK refused.
 */
import { existsSync } from 'node:fs';
import type { HandlerContext, JsonObject } from '@onceq/core';
import { v1 } from '@onceq/handler';

export const version = 'slow-test';

export async function handle(payload: JsonObject, context: HandlerContext) {
  const note = (what: string) => process.stderr.write(`${what} ${context.eventId}\n`);
  process.stderr.write(`handler-start ${context.eventId} g${context.generation}\n`);
  const ms = typeof payload.sleep_ms === 'number' ? payload.sleep_ms : 0;
  const gate = typeof payload.gate === 'string' ? payload.gate : null;
  await new Promise<void>((resolve) => {
    const timer =
      gate === null
        ? setTimeout(resolve, ms)
        : setInterval(() => {
            if (existsSync(gate)) {
              clearInterval(timer);
              resolve();
            }
          }, 20);
    context.signal.addEventListener('abort', () => {
      note('handler-aborted');
      clearTimeout(timer);
      setTimeout(resolve, 200);
    });
  });
  note('handler-end');
  return v1(payload, context);
}
