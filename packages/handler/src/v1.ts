/** Handler v1 (docs/protocol.md §3): categories `book`, `pen`, `bag`; `amount_cents` a JSON integer 1…9,999,999. */
import type { Handler } from '../../core/src/types.ts';
import { makeHandler, payloadSchema } from './rules.ts';

/** Categories handler v1 accepts. */
export const V1_CATEGORIES = ['book', 'pen', 'bag'] as const;

/** The zod schema of a payload v1 accepts (extra fields allowed and ignored). */
export const v1PayloadSchema = payloadSchema(V1_CATEGORIES);

/**
 * Handler v1: returns `{ category, amountCents }` or throws
 * `PermanentFailure('invalid_payload', detail)`.
 */
export const v1: Handler = makeHandler('v1', V1_CATEGORIES);
