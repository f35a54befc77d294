import { TemporaryFailure } from '@onceq/core';
import type { EffectHandler } from '@onceq/handler';

/**
 * Wrap `base` so that each event id in `eventIds` fails with a
 * `TemporaryFailure(code, …)` on attempt 1 only; every other call (and any later
 * attempt) delegates to `base`. The demo's "controlled temporary error".
 */
export function failingOnce(
  base: EffectHandler,
  eventIds: ReadonlySet<string>,
  code = 'dependency_down',
): EffectHandler {
  return (payload, message) => {
    if (message.attempt === 1 && eventIds.has(message.eventId)) {
      throw new TemporaryFailure(
        code,
        `simulated temporary failure for ${message.eventId} on attempt 1`,
      );
    }
    return base(payload, message);
  };
}
