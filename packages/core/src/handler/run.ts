/**
 * The one runner: a handler (sync or async) on one stored payload, outside any
 * transaction, and what it returned or threw turned into a {@link HandlerResult}. Every
 * caller (the worker loop, `apply`, `redrive --dry-run`) runs handlers through it.
 */

import { deliveryRows } from '../delivery/declare.ts';
import { errorText, FAILURE_BRAND } from '../errors.ts';
import { isJsonObject, type JsonObject } from '../input/json-value.ts';
import { parseJson } from '../input/parse-json.ts';
import type { FailInput } from '../types.ts';
import { checkRows, effectRows, type RowGroup, recordRows } from './completion-rows.ts';
import type { CompletionTx, Effect, Handler, HandlerContext, HandlerStore } from './contract.ts';
import { effectViolation } from './effect-rules.ts';

/** The longest {@link Completion.summary} onceq records. */
export const MAX_SUMMARY_LENGTH = 200;

/**
 * The one success kind: what a handler returned, as the runner checked and copied it.
 * The lesson's money effect is one of these too (its row of the built-in `effects`
 * table); a completion of the handler's own carries its `insert` rows and onceq's
 * record of it (a `completions` row).
 */
export interface CheckedCompletion {
  /**
   * Every row written with the ACK, grouped by table and column list: the money effect's
   * `effects` row, or the handler's `insert` rows followed by onceq's `completions` record.
   */
  readonly rows: readonly RowGroup[];
  /** Its `write`, bound to the handler's object; null without one. */
  readonly write: ((tx: CompletionTx) => unknown) | null;
  readonly summary: string | null;
  /** The money effect the rows carry (what the outcome reports), or null. */
  readonly effect: Effect | null;
}

/**
 * What running a handler on one message came to: the completion to record with the ACK,
 * or the failure to record instead. A copy, checked once: nothing of the handler's own
 * object is read again after the runner returns.
 */
export type HandlerResult =
  | { readonly completion: CheckedCompletion }
  | { readonly failure: FailInput };

/** What `context.store` says about `store`: its backend and the schema of onceq's tables. */
export function handlerStore(store: HandlerStore): HandlerStore {
  return Object.freeze({ kind: store.kind, schema: store.schema });
}

/**
 * Runs `handler` on the stored payload `payloadText` and returns its checked result. A
 * payload that is not a JSON object is a permanent `invalid_payload`; a branded failure
 * keeps its kind and code; anything else thrown is a temporary `handler_error`.
 *
 * A synchronous handler's result comes back as it is, not in a promise: the worker loop
 * then records it without a promise per message. Await it either way.
 */
export function runHandler(
  handler: Handler,
  payloadText: string,
  context: HandlerContext,
): HandlerResult | Promise<HandlerResult> {
  let returned: unknown;
  try {
    const input = handlerInput(payloadText);
    if ('failure' in input) return input;
    returned = handler(input.payload, context);
    if (!isThenable(returned)) return resultOf(returned, context.eventId);
  } catch (error) {
    return { failure: failureOf(error) };
  }
  return Promise.resolve(returned).then(
    (value) => checkedResultOf(value, context.eventId),
    (error: unknown) => ({ failure: failureOf(error) }),
  );
}

/** {@link resultOf}, with a value whose reading throws (a getter) as the handler's failure. */
function checkedResultOf(value: unknown, eventId: string): HandlerResult {
  try {
    return resultOf(value, eventId);
  } catch (error) {
    return { failure: failureOf(error) };
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** The code of the temporary failure a handler that runs past its deadline gets. */
export const HANDLER_TIMEOUT_CODE = 'handler_timeout';

/**
 * `running` (a {@link runHandler} call) with a deadline: past `timeoutMs` it calls
 * `abort` (the handler's signal) and resolves to a temporary {@link HANDLER_TIMEOUT_CODE}
 * failure at once; what the handler returns later is dropped. No deadline when
 * `timeoutMs` is undefined. A synchronous handler blocks the process and cannot be
 * interrupted.
 */
export function withDeadline(
  running: HandlerResult | Promise<HandlerResult>,
  timeoutMs: number | undefined,
  abort: (reason: Error) => void,
): HandlerResult | Promise<HandlerResult> {
  // A synchronous handler has returned already: no deadline to watch.
  if (timeoutMs === undefined || !(running instanceof Promise)) return running;
  return new Promise((resolve) => {
    let late = false;
    const timer = setTimeout(() => {
      const detail = `the handler did not return within ${timeoutMs / 1000} s; its signal was aborted`;
      late = true;
      pastDeadline += 1;
      abort(new Error(detail));
      resolve({ failure: { kind: 'temporary', code: HANDLER_TIMEOUT_CODE, detail } });
    }, timeoutMs);
    running.then((result) => {
      clearTimeout(timer);
      if (late) pastDeadline -= 1;
      resolve(result);
    });
  });
}

let pastDeadline = 0;

/**
 * How many handler calls of this process ran past their deadline and have still not
 * returned (they ignored their aborted signal). Their results are dropped; the CLI exits
 * without waiting for them once its command is over.
 */
export function handlersPastDeadline(): number {
  return pastDeadline;
}

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
 * What the handler returned, read **once**: each field is read a single time into a copy,
 * the copy is checked, and the copy is what gets stored. A getter that answers differently
 * on a second read cannot get one value checked and another written. An effect the
 * `effects` table would refuse fails its own message (`invalid_effect`), never a batch's
 * write; an object with a `write`, an `insert` or a `deliver` is a completion (a bad
 * `insert` fails its message as `invalid_completion`, naming the table and column). A
 * completion's `deliver` list becomes rows of onceq's `deliveries` table for the message
 * `eventId`, written like the `insert` rows (delivery/declare.ts).
 */
export function resultOf(value: unknown, eventId?: string): HandlerResult {
  if (typeof value !== 'object' || value === null) {
    const what = value === null ? 'null' : typeof value;
    return invalid('invalid_effect', `the handler returned ${what}, not an effect object`);
  }
  const { write, insert, deliver, summary, category, amountCents } = value as Record<
    string,
    unknown
  >;
  if (write !== undefined || insert !== undefined || deliver !== undefined) {
    if (write !== undefined && typeof write !== 'function') {
      return invalid(
        'invalid_completion',
        `the handler's completion has a write that is ${typeof write}, not a function`,
      );
    }
    if (
      summary !== undefined &&
      (typeof summary !== 'string' || summary.length > MAX_SUMMARY_LENGTH)
    ) {
      return invalid(
        'invalid_completion',
        `the handler's completion summary must be a string of at most ${MAX_SUMMARY_LENGTH} characters`,
      );
    }
    const checked = insert === undefined ? { groups: [] } : checkRows(insert);
    if ('violation' in checked) return invalid('invalid_completion', checked.violation);
    let rows = checked.groups;
    if (deliver !== undefined) {
      if (eventId === undefined) {
        return invalid('invalid_completion', "a completion's deliver needs its message's event id");
      }
      const deliveries = deliveryRows(deliver, eventId);
      if ('violation' in deliveries) return invalid('invalid_completion', deliveries.violation);
      rows = [...rows, ...deliveries.groups];
    }
    return {
      completion: ownCompletion(
        rows,
        write === undefined ? null : (tx) => Reflect.apply(write, value, [tx]),
        (summary as string | undefined) ?? null,
      ),
    };
  }
  const copy = { category, amountCents } as Effect;
  const violation = effectViolation(copy);
  if (violation !== null) return invalid('invalid_effect', violation);
  return effectResult(copy);
}

/** A handler's own completion as the one shape: its rows, then onceq's record of it. */
export function ownCompletion(
  rows: readonly RowGroup[],
  write: CheckedCompletion['write'],
  summary: string | null,
): CheckedCompletion {
  return { rows: [...rows, recordRows(summary)], write, summary, effect: null };
}

/** A checked money effect as the one completion shape: its `effects` row and nothing else. */
export function effectResult(effect: Effect): { completion: CheckedCompletion } {
  return { completion: { rows: [effectRows(effect)], write: null, summary: null, effect } };
}

function invalid(code: string, detail: string): HandlerResult {
  return { failure: { kind: 'permanent', code, detail } };
}

/**
 * What a handler (or a completion's write) threw, read once: a branded failure (any copy
 * of `HandlerFailure`, or a plain object with the brand and a string `code`) keeps its
 * kind and code; anything else is a temporary `handler_error`.
 */
export function failureOf(error: unknown): FailInput {
  if (typeof error === 'object' && error !== null) {
    const kind = (error as Record<PropertyKey, unknown>)[FAILURE_BRAND];
    const { code } = error as { code?: unknown };
    if ((kind === 'temporary' || kind === 'permanent') && typeof code === 'string') {
      const { message } = error as { message?: unknown };
      return { kind, code, detail: typeof message === 'string' ? message : '' };
    }
  }
  return {
    kind: 'temporary',
    code: 'handler_error',
    detail: `the handler threw: ${errorText(error)}`,
  };
}
