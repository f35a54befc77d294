/**
 * `@onceq/core/testing`: hooks for crash tests, never needed by an application. Named
 * crash points in the real protocol code, armed by `ONCEQ_FAULT=<point>` (the process
 * exits with {@link FAULT_EXIT_CODE} on the spot), and stores created at an old schema
 * version, for migration tests.
 *
 * @module
 */

export {
  /** Creates a store at `target` migrated only up to the migration `name` (an old schema version). */
  createStoreAt,
} from './migrations/at.ts';
export {
  /** The armed point from `ONCEQ_FAULT`, or null; throws {@link UnknownFaultError} for a name that is no point. */
  armedFault,
  /** Exits the process at `point` when it is the armed one; else returns. */
  crashPoint,
  /** The exit code of a process that stopped at its armed crash point: 86. */
  FAULT_EXIT_CODE,
  /** Every crash point, in the order a message meets them. */
  FAULT_POINTS,
  type FaultPoint,
  /** Registers a synchronous callback run at the armed point just before the exit. */
  onCrashPoint,
  /** `ONCEQ_FAULT` names no crash point. */
  UnknownFaultError,
} from './testing/crash-points.ts';
