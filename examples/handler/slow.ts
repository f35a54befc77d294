/**
 * A slow handler for experiments with the worker: handler v2's rules after waiting
 * `sleep_ms` milliseconds from the payload (0 when absent), stopping early when the
 * worker aborts its signal (lost lease, forced stop).
 *
 *   onceq worker --handler ./examples/handler/slow.ts --lease 2
 *
 * With `sleep_ms` longer than the lease, the worker's heartbeats keep the lease alive.
 */
import { type Effect, type HandlerContext, type JsonObject, TemporaryFailure } from '@onceq/core';
import { v2 } from '@onceq/handler';

export const version = 'slow-v2';

export async function handle(payload: JsonObject, context: HandlerContext): Promise<Effect> {
  const ms = typeof payload.sleep_ms === 'number' ? payload.sleep_ms : 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    context.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new TemporaryFailure('aborted', `${context.eventId}: the worker gave up its lease`));
    });
  });
  return v2(payload, context);
}
