import type { Effect } from './contract.ts';

/** The largest amount an effect row may carry, as the `effects` table's CHECK says. */
export const MAX_EFFECT_CENTS = 9_999_999;

/**
 * The longest category an effect may carry, in characters. A category is a label that
 * every `status`, metric scrape and console poll prints: a megabyte of it would be
 * printed every time.
 */
export const MAX_CATEGORY_LENGTH = 64;

/** A value as a reason shows it: `"100"` (a string) apart from `100`, `5n` apart from `5`. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/**
 * Why `effect` (what a handler returned) cannot be stored, or null when it can. The same
 * rules as the `effects` table's CHECKs (non-empty category, amount an integer from 1 to
 * 9,999,999) plus a category of at most {@link MAX_CATEGORY_LENGTH} characters, checked in JavaScript first so that one handler's bad effect fails that
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
    return `the handler's effect has category ${shown(category)}, not a non-empty string`;
  }
  const length = [...category].length;
  if (length > MAX_CATEGORY_LENGTH) {
    return `the handler's effect has a category of ${length.toLocaleString('en-US')} characters; at most ${MAX_CATEGORY_LENGTH} are allowed`;
  }
  if (
    typeof amountCents !== 'number' ||
    !Number.isInteger(amountCents) ||
    amountCents < 1 ||
    amountCents > MAX_EFFECT_CENTS
  ) {
    return `the handler's effect has amountCents ${shown(amountCents)}, not an integer from 1 to ${MAX_EFFECT_CENTS}`;
  }
  return null;
}
