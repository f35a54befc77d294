/**
 * `@onceq/handler`: the business rules (docs/protocol.md §3). Handler versions, lookup helpers,
 * and the failure kinds a handler throws, all in one place.
 *
 * @module
 */
export {
  /** Base class of the failures a handler throws (`kind` temporary or permanent). */
  HandlerFailure,
  /** A failure that goes straight to `dead` (e.g. `invalid_payload`). */
  PermanentFailure,
  /** A failure that is retried with backoff (e.g. a dependency is down). */
  TemporaryFailure,
} from '../../core/src/errors.ts';
export type { JsonObject } from '../../core/src/json/value.ts';
export type {
  AsyncHandler,
  Effect,
  Handler,
  HandlerContext,
  WorkerHandlerContext,
} from '../../core/src/types.ts';
export {
  type HandlerModule,
  HandlerModuleError,
  isHandlerPath,
  loadHandlerModule,
} from './module.ts';
export {
  type Acceptance,
  accepts,
  DEFAULT_HANDLER,
  DRY_RUN_CONTEXT,
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
  INVALID_PAYLOAD,
  MAX_AMOUNT_CENTS,
  MIN_AMOUNT_CENTS,
  makeHandler,
  payloadSchema,
  rejectionDetail,
} from './rules.ts';
export { V1_CATEGORIES, v1, v1PayloadSchema } from './v1.ts';
export { V2_CATEGORIES, v2, v2PayloadSchema } from './v2.ts';
