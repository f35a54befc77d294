/** Handler v2 (docs/protocol.md §3): v1 plus category `toy`; same `amount_cents` rule. */
import { type EffectHandler, makeHandler } from './rules.ts';
import { V1_CATEGORIES } from './v1.ts';

/** Categories handler v2 accepts: v1's plus `toy`. */
export const V2_CATEGORIES = [...V1_CATEGORIES, 'toy'] as const;

/**
 * Handler v2: returns `{ category, amountCents }` or throws
 * `PermanentFailure('invalid_payload', detail)`.
 */
export const v2: EffectHandler = makeHandler('v2', V2_CATEGORIES);
