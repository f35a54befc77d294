import { type Handler, TemporaryFailure } from '@onceq/core';

/**
 * Wrap `base` so that each event id in `eventIds` fails with a
 * `TemporaryFailure(code, …)` on attempt 1 only; every other call (and any later
 * attempt) delegates to `base`. The demo's "controlled temporary error".
 */
export function failingOnce(
  base: Handler,
  eventIds: ReadonlySet<string>,
  code = 'dependency_down',
): Handler {
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
