/**
 * Time in onceq is integer Unix seconds read from a clock the caller can replace.
 * Every operation reads the clock itself (apply reads it twice), so a test can move
 * time between two statements of one transaction.
 */
export type Clock = () => number;

/** The wall clock, in whole seconds. */
export const systemClock: Clock = () => Math.floor(Date.now() / 1000);

/** A clock stuck at `seconds` until `set` or `advance` moves it: the model clock of tests and the demo. */
export interface ModelClock extends Clock {
  set(seconds: number): void;
  advance(seconds: number): void;
}

export function modelClock(start: number): ModelClock {
  let current = start;
  const clock = (() => current) as ModelClock;
  clock.set = (seconds) => {
    current = seconds;
  };
  clock.advance = (seconds) => {
    current += seconds;
  };
  return clock;
}
