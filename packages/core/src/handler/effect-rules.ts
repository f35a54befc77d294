import type { Effect } from './contract.ts';

/** The largest amount an effect row may carry, as the `effects` table's CHECK says. */
export const MAX_EFFECT_CENTS = 9_999_999;

/**
 * Why `effect` (what a handler returned) cannot be stored, or null when it can. The same
 * rules as the `effects` table's CHECKs (non-empty category, amount an integer from 1 to
 * 9,999,999), checked in JavaScript first so that one handler's bad effect fails that
 * message (`invalid_effect`) instead of making the whole batch's INSERT throw. The CHECKs
 * stay as the second guard. Reads each field of `effect` once; the runner passes the copy
 * it then stores.
 */
export function effectViolation(effect: unknown): string | null {
  if (typeof effect !== 'object' || effect === null) {
    return `the handler returned ${effect === null ? 'null' : typeof effect}, not an effect object`;
  }
  const { category, amountCents } = effect as Partial<Effect>;
  if (typeof category !== 'string' || category.length === 0) {
    return `the handler's effect has category ${JSON.stringify(category) ?? 'undefined'}, not a non-empty string`;
  }
  if (
    typeof amountCents !== 'number' ||
    !Number.isInteger(amountCents) ||
    amountCents < 1 ||
    amountCents > MAX_EFFECT_CENTS
  ) {
    return `the handler's effect has amountCents ${String(amountCents)}, not an integer from 1 to ${MAX_EFFECT_CENTS}`;
  }
  return null;
}
