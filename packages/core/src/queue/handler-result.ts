import { FAILURE_BRAND, isHandlerFailure } from '../errors.ts';
import { isJsonObject, type JsonObject } from '../input/json-value.ts';
import { parseJson } from '../input/parse-json.ts';
import type { Effect, FailInput, Handler, HandlerContext } from '../types.ts';
import { effectViolation } from './effect-rules.ts';

/**
 * What running a handler on one message came to, sync (apply, inside its transaction) or
 * async (the worker's settle, outside it): the same three rules for both, here once.
 */
export type HandlerResult = { effect: Effect } | { failure: FailInput };

/** The stored payload as the object a handler takes, or the permanent failure if it is not one. */
export function handlerInput(
  payloadText: string,
): { payload: JsonObject } | { failure: FailInput } {
  const payload = parseJson(payloadText);
  if (isJsonObject(payload)) return { payload };
  return {
    failure: {
      kind: 'permanent',
      code: 'invalid_payload',
      detail: 'the stored payload is not a JSON object',
    },
  };
}

/**
 * What the handler returned, checked before any write: an effect the `effects` table
 * would refuse fails its own message (`invalid_effect`), never the batch's INSERT.
 */
export function effectResult(effect: Effect): HandlerResult {
  const invalid = effectViolation(effect);
  if (invalid !== null) {
    return { failure: { kind: 'permanent', code: 'invalid_effect', detail: invalid } };
  }
  return { effect: { category: effect.category, amountCents: effect.amountCents } };
}

/**
 * What the handler threw: a branded failure (any copy of `HandlerFailure`, or a plain
 * object with the brand) keeps its kind and code, anything else is a temporary
 * `handler_error`.
 */
export function thrownResult(error: unknown): HandlerResult {
  if (isHandlerFailure(error)) {
    const detail = typeof error.message === 'string' ? error.message : '';
    return { failure: { kind: error[FAILURE_BRAND], code: error.code, detail } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    failure: { kind: 'temporary', code: 'handler_error', detail: `the handler threw: ${message}` },
  };
}

/**
 * Runs a synchronous handler on a stored payload under the three rules above: apply's
 * handler call (inside its transaction) and `redrive --dry-run`'s (changing nothing)
 * are this one function.
 */
export function runSyncHandler(
  handler: Handler,
  payloadText: string,
  context: HandlerContext,
): HandlerResult {
  try {
    const input = handlerInput(payloadText);
    if ('failure' in input) return input;
    return effectResult(handler(input.payload, context));
  } catch (error) {
    return thrownResult(error);
  }
}
