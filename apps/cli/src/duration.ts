import { UsageError } from './errors.ts';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A duration flag in whole seconds: digits and one unit, `30d`, `12h`, `90m`, `3600s`
 * (no unit, no fractions, no combinations). A bad value is a usage error naming the flag.
 */
export function parseDuration(raw: string, flag: string): number {
  const match = /^([0-9]{1,9})([smhd])$/.exec(raw);
  if (match === null) {
    throw new UsageError(
      `${flag} must be a whole number with a unit s, m, h or d (e.g. 30d, 12h, 90m, 3600s), got ${JSON.stringify(raw)}`,
    );
  }
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}
