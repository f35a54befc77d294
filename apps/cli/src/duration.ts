import { durationSeconds } from '@onceq/core/internal';
import { UsageError } from './errors.ts';

/**
 * A duration flag in whole seconds: digits and one unit, `30d`, `12h`, `90m`, `3600s`
 * (no unit, no fractions, no combinations). A bad value is a usage error naming the flag.
 */
export function parseDuration(raw: string, flag: string): number {
  const seconds = durationSeconds(raw);
  if (seconds === null) {
    throw new UsageError(
      `${flag} must be a whole number with a unit s, m, h or d (e.g. 30d, 12h, 90m, 3600s), got ${JSON.stringify(raw)}`,
    );
  }
  return seconds;
}
