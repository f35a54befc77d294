/** Handler v1 (docs/protocol.md §3): categories `book`, `pen`, `bag`; `amount_cents` a JSON integer 1…9,999,999. */
import { type EffectHandler, makeHandler } from './rules.ts';

/** Categories handler v1 accepts. */
export const V1_CATEGORIES = ['book', 'pen', 'bag'] as const;

/**
 * Handler v1: returns `{ category, amountCents }` or throws
 * `PermanentFailure('invalid_payload', detail)`.
 */
export const v1: EffectHandler = makeHandler('v1', V1_CATEGORIES);
