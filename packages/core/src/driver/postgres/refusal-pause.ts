/** How long to wait after the server refused a connection, ms; each refusal in a row waits longer. */
const REFUSAL_PAUSES_MS = [1000, 2000, 5000, 10_000, 30_000] as const;

/**
 * The pause after the `refusals`-th refusal in a row (0: the first): 1 s, 2 s, 5 s, 10 s,
 * then 30 s for every later one. The pool pauses its growth this long; a worker waiting
 * for its first connection waits this long between tries.
 */
export function refusalPauseMs(refusals: number): number {
  return REFUSAL_PAUSES_MS[Math.min(refusals, REFUSAL_PAUSES_MS.length - 1)] as number;
}
