/** The handler versions onceq knows, and lookup helpers for the CLI and the worker. */
import { HandlerFailure, TemporaryFailure } from '../../core/src/errors.ts';
import type { JsonObject } from '../../core/src/json/value.ts';
import type { Effect, Handler, HandlerContext } from '../../core/src/types.ts';
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
export const handlers: Readonly<Record<HandlerVersion, Handler>> = Object.freeze({ v1, v2 });

/**
 * The handler of `version`. Throws a plain `Error`
 * (`unknown handler version "v9" (known: v1, v2)`) for an unknown version.
 */
export function getHandler(version: string): Handler {
  if (!isHandlerVersion(version)) {
    throw new Error(
      `unknown handler version ${JSON.stringify(version)} (known: ${HANDLER_VERSIONS.join(', ')})`,
    );
  }
  return handlers[version];
}

/** What {@link accepts} says about one payload. */
export type Acceptance = { ok: true; effect: Effect } | { ok: false; code: string; detail: string };

/** The context {@link accepts} passes when the caller gives none: a first attempt. */
export const DRY_RUN_CONTEXT: HandlerContext = Object.freeze({
  eventId: '',
  attempt: 1,
  generation: 0,
});

/**
 * Would handler `version` accept `payload`? Runs the handler without side effects
 * (used by `redrive --dry-run`). A {@link HandlerFailure} becomes `{ ok: false }`;
 * an unknown version throws like {@link getHandler}; any other error propagates.
 */
export function accepts(
  version: string,
  payload: JsonObject,
  context: HandlerContext = DRY_RUN_CONTEXT,
): Acceptance {
  const handler = getHandler(version);
  try {
    return { ok: true, effect: handler(payload, context) };
  } catch (error) {
    if (error instanceof HandlerFailure) {
      return { ok: false, code: error.code, detail: error.message };
    }
    throw error;
  }
}

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
