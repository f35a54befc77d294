/**
 * Named crash points in the real protocol code, for crash tests only.
 *
 * A test (or the demo's crash child) arms **one** point through the environment,
 * `ONCEQ_FAULT=<point>`, read once, at the first crash point reached (or the first
 * {@link armedFault} call: the CLI makes it at start). Nothing happens at import time.
 * When the running code reaches
 * the armed point the process exits on the spot with {@link FAULT_EXIT_CODE}: no
 * `finally`, no ROLLBACK, no COMMIT, no close, exactly like a power cut or SIGKILL at
 * that instant. Unset (every normal run), {@link crashPoint} is two comparisons of a
 * module variable and returns.
 *
 * The points, in the order a message meets them:
 * - `after-claim`: the claim committed, before any handler ran.
 * - `after-handler`: the handlers ran, nothing of their results written yet.
 * - `after-effect-insert`: inside the completion's transaction, the result template
 *   written (fenced ACKs and the money effects' rows), before COMMIT.
 * - `after-completion-write`: inside the completion's transaction, the rows of a
 *   handler's own completion written with its fenced ACK, and again after each of its
 *   `write(tx)` returned, before COMMIT.
 * - `after-ack`: inside the completion's transaction, everything written (failures and
 *   the trailing claim included), before COMMIT.
 *   (PostgreSQL writes a batch without `write(tx)` as one statement committing by
 *   itself: there these three points are the same instant, after it has committed.)
 * - `after-commit`: the completion committed, before the caller hears of it.
 * - `mid-enqueue`: inside the enqueue transaction, its rows inserted, before COMMIT.
 * - `mid-redrive`: inside the redrive transaction, the rows moved to ready, before COMMIT.
 *
 * How to add one: add its name to {@link FAULT_POINTS}, call `crashPoint('<name>')` at the
 * spot, and add a case to tests/conformance/crash-points.test.ts saying what the store must look
 * like afterwards and after recovery.
 */
import { keepClassNames, OnceqError } from '../errors.ts';

export const FAULT_POINTS = [
  'after-claim',
  'after-handler',
  'after-effect-insert',
  'after-completion-write',
  'after-ack',
  'after-commit',
  'mid-enqueue',
  'mid-redrive',
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** The exit code of a process that stopped at its armed crash point. */
export const FAULT_EXIT_CODE = 86;

function isFaultPoint(name: string): name is FaultPoint {
  return (FAULT_POINTS as readonly string[]).includes(name);
}

/** `ONCEQ_FAULT` names no crash point: refused (exit 2), so a typo cannot disarm a crash test. */
export class UnknownFaultError extends OnceqError {
  constructor(value: string) {
    super(
      'unknown_fault',
      2,
      `ONCEQ_FAULT=${JSON.stringify(value)} names no crash point (${FAULT_POINTS.join(', ')})`,
    );
  }
}
keepClassNames({ UnknownFaultError });

function armedFromEnv(value: string | undefined): FaultPoint | null {
  if (value === undefined || value === '') return null;
  if (isFaultPoint(value)) return value;
  throw new UnknownFaultError(value);
}

/** Read once; `undefined` until then. */
let armed: FaultPoint | null | undefined;

/**
 * The armed point from `ONCEQ_FAULT`, or null (the default: no fault injection at all).
 * Throws {@link UnknownFaultError} when it names no point.
 */
export function armedFault(): FaultPoint | null {
  armed ??= armedFromEnv(process.env.ONCEQ_FAULT);
  return armed;
}

let lastWords: ((point: FaultPoint) => void) | undefined;

/**
 * Registers a synchronous callback run at the armed point just before the exit (the
 * demo's crash child writes its report there). Only one; a later call replaces it.
 */
export function onCrashPoint(fn: (point: FaultPoint) => void): void {
  lastWords = fn;
}

/** Exits the process with {@link FAULT_EXIT_CODE} when `point` is the armed one; else returns. */
export function crashPoint(point: FaultPoint): void {
  if ((armed ?? armedFault()) !== point) return;
  lastWords?.(point);
  process.exit(FAULT_EXIT_CODE);
}
