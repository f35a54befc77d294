/**
 * A queue's retry policy as users write it (docs/worker.md, "Policy"): how many claims a
 * message gets, how long it waits between them, how long a lease lasts, and whether a
 * dead message blocks its ordering key. Parsed here, once, for the CLI's flags, the
 * config file and the library's options alike.
 */

/** What a dead message does to its ordering key: hold it (`block`) or let the next message go (`skip`). */
export const ON_DEAD = ['block', 'skip'] as const;
export type OnDead = (typeof ON_DEAD)[number];

/** A delay before a retry, in whole seconds, after `attempt` claims (1-based). */
export type BackoffSchedule = (attempt: number) => number;

/** The longest delay or lease a policy may name: 30 days. */
export const MAX_POLICY_SECONDS = 30 * 86_400;

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A duration in whole seconds: digits and one unit, `30s`, `10m`, `12h`, `30d`; `null`
 * when `text` is not one.
 */
export function durationSeconds(text: string): number | null {
  const match = /^([0-9]{1,9})([smhd])$/.exec(text);
  if (match === null) return null;
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}

/** How the backoff syntax reads, for messages. */
export const BACKOFF_SYNTAX =
  'a list of durations like 1s,5s,1m (the last repeats) or exp:BASE..CAP like exp:1s..10m (doubling, capped, jittered)';

/**
 * A backoff schedule from its text, or a sentence saying what is wrong (never throws):
 *
 * - `1s,5s,1m`: the delay after the first claim, the second, …; the last one repeats;
 * - `exp:1s..10m`: `1s` after the first claim, doubling after each one, never above
 *   `10m`; each delay is drawn between half of it and all of it (jitter, so workers
 *   that failed together do not retry together), rounded to whole seconds, at least 1 s.
 */
export function parseBackoff(
  text: string,
  random: () => number = Math.random,
): BackoffSchedule | string {
  const exp = /^exp:([^.]+)\.\.(.+)$/.exec(text);
  if (exp !== null) {
    const base = durationSeconds(exp[1] as string);
    const cap = durationSeconds(exp[2] as string);
    if (base === null || cap === null || base < 1 || cap < base || cap > MAX_POLICY_SECONDS) {
      return `must be ${BACKOFF_SYNTAX}, with 1s ≤ BASE ≤ CAP ≤ 30d; got ${JSON.stringify(text)}`;
    }
    return exponential(base, cap, random);
  }
  const parts = text.split(',');
  const delays = parts.map((part) => durationSeconds(part.trim()));
  if (
    text.trim() === '' ||
    delays.some((d) => d === null || d > MAX_POLICY_SECONDS) ||
    delays.length > 100
  ) {
    return `must be ${BACKOFF_SYNTAX}, each at most 30d and at most 100 of them; got ${JSON.stringify(text)}`;
  }
  return listed(delays as number[]);
}

/** The delays of `delays` in turn, the last one repeating. */
export function listed(delays: readonly number[]): BackoffSchedule {
  const last = delays.length - 1;
  return (attempt) => delays[Math.min(Math.max(0, attempt - 1), last)] as number;
}

/** `base · 2^(attempt-1)` capped at `cap`, drawn between half and all of it (at least 1 s). */
export function exponential(
  base: number,
  cap: number,
  random: () => number = Math.random,
): BackoffSchedule {
  return (attempt) => {
    const full = Math.min(cap, base * 2 ** Math.min(40, Math.max(0, attempt - 1)));
    return Math.max(1, Math.round(full / 2 + random() * (full / 2)));
  };
}

/** The policy a worker runs with, as given: each part optional (the store's default applies). */
export interface PolicyOptions {
  /** Claims a message gets in one cycle before it goes dead. Default: the store's (3). */
  attempts?: number;
  /**
   * Delays before retries: a schedule's text (`'1s,5s,1m'`, `'exp:1s..10m'`), the delays
   * in seconds (the last repeats), or a function of the attempt. Default: the store's (1 s, then 2 s).
   */
  backoff?: string | readonly number[] | BackoffSchedule;
  /** Lease length in seconds; heartbeats renew it every third. Default: the store's (30). */
  leaseSeconds?: number;
  /**
   * What a dead message of an ordering key does to the key: `block` holds it until the
   * message is redriven or skipped; `skip` lets the key's next message go at once.
   * Default: the store's (`block`).
   */
  onDead?: OnDead;
}

/**
 * The checked schedule of {@link PolicyOptions.backoff}; throws a RangeError with one
 * sentence naming `backoff` when it is not one.
 */
export function backoffOf(backoff: NonNullable<PolicyOptions['backoff']>): BackoffSchedule {
  if (typeof backoff === 'function') return backoff;
  if (typeof backoff === 'string') {
    const parsed = parseBackoff(backoff);
    if (typeof parsed === 'string') throw new RangeError(`backoff ${parsed}`);
    return parsed;
  }
  if (
    backoff.length === 0 ||
    backoff.some((d) => !Number.isInteger(d) || d < 0 || d > MAX_POLICY_SECONDS)
  ) {
    throw new RangeError(
      `backoff must list whole numbers of seconds between 0 and ${MAX_POLICY_SECONDS}, got ${JSON.stringify(backoff)}`,
    );
  }
  return listed(backoff);
}
