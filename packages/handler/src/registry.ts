/** The handler versions onceq knows, and lookup helpers for the CLI and the worker. */
import { TemporaryFailure } from '@onceq/core';
import type { EffectHandler } from './rules.ts';
import { v1 } from './v1.ts';
import { v2 } from './v2.ts';
import { HANDLER_VERSIONS, type HandlerVersion, isHandlerVersion } from './versions.ts';

export {
  DEFAULT_HANDLER,
  HANDLER_VERSIONS,
  type HandlerVersion,
  isHandlerVersion,
  LATEST_HANDLER,
} from './versions.ts';

/** The handler of each version. */
export const handlers: Readonly<Record<HandlerVersion, EffectHandler>> = Object.freeze({ v1, v2 });

/**
 * The handler of `version`. Throws a plain `Error`
 * (`unknown handler version "v9" (known: v1, v2)`) for an unknown version.
 */
export function getHandler(version: string): EffectHandler {
  if (!isHandlerVersion(version)) {
    throw new Error(
      `unknown handler version ${JSON.stringify(version)} (known: ${HANDLER_VERSIONS.join(', ')})`,
    );
  }
  return handlers[version];
}

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
