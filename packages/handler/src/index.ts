/**
 * `@onceq/handler`: the lesson's category rules (docs/protocol.md §3), versioned `v1` /
 * `v2`, and the zod schemas they are built from. Nothing else: the handler contract and
 * the failures a handler throws are `@onceq/core`'s, and the CLI loads your own handler
 * module itself, so your handler never needs this package (nor zod).
 *
 * @module
 */
import type { EffectHandler } from './rules.ts';
import { v1 } from './v1.ts';
import { v2 } from './v2.ts';
import type { HandlerVersion } from './versions.ts';

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
export {
  DEFAULT_HANDLER,
  HANDLER_VERSIONS,
  type HandlerVersion,
  isHandlerVersion,
  LATEST_HANDLER,
} from './versions.ts';

/** The rules of each version, by name. */
export const handlers: Readonly<Record<HandlerVersion, EffectHandler>> = Object.freeze({ v1, v2 });
