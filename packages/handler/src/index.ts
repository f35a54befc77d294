/**
 * `@onceq/handler`: the business rules (docs/protocol.md §3). Handler versions, lookup helpers,
 * and the failure kinds a handler throws, all in one place.
 *
 * @module
 */

export type {
  Completion,
  CompletionTx,
  Effect,
  Handler,
  HandlerContext,
  HandlerReturn,
  JsonObject,
} from '@onceq/core';
export {
  /** Base class of the failures a handler throws (`kind` temporary or permanent). */
  HandlerFailure,
  /** A failure that goes straight to `dead` (e.g. `invalid_payload`). */
  PermanentFailure,
  /** A failure that is retried with backoff (e.g. a dependency is down). */
  TemporaryFailure,
} from '@onceq/core';
export {
  type HandlerModule,
  HandlerModuleError,
  isHandlerPath,
  loadHandlerModule,
} from './module.ts';
export {
  DEFAULT_HANDLER,
  failingOnce,
  getHandler,
  HANDLER_VERSIONS,
  type HandlerVersion,
  handlers,
  isHandlerVersion,
  LATEST_HANDLER,
} from './registry.ts';
export {
  amountCentsSchema,
  categorySchema,
  describeValue,
  type EffectHandler,
  INVALID_PAYLOAD,
  MAX_AMOUNT_CENTS,
  MIN_AMOUNT_CENTS,
  makeHandler,
  payloadSchema,
} from './rules.ts';
export { V1_CATEGORIES, v1 } from './v1.ts';
export { V2_CATEGORIES, v2 } from './v2.ts';
