/**
 * The maintenance half of a backend's driver: every statement onceq runs outside the
 * claim → complete path whose SQL differs between backends (the doctor's storage and
 * planner probes, the schema it compares with, the counters' recount lock, VACUUM,
 * backup), as methods on an {@link Executor} and facts as plain data. The modules in
 * `maintenance/` call these and read no backend kind; each backend implements it once,
 * one file per operation (`sqlite/sql/*.ts`, `postgres/sql/*.ts`).
 *
 * SQL the two backends share word for word (counts, the invariants, prune's pages) is
 * written once, in `driver/sql/*.ts`, and run through {@link Executor.query}.
 */
import type { Finding } from '../maintenance/doctor-types.ts';
import type { Executor } from './prepared.ts';

/** One schema object as the doctor compares it: `kind name` → its normalized definition. */
export type SchemaMap = Map<string, string>;

/** A check of the doctor's that only some backends have (it names itself in the report). */
export interface DoctorProbe {
  /** The check's stable name in the report, e.g. `integrity_check`. */
  readonly name: string;
  run(x: Executor, options: ProbeOptions): Promise<Finding[]>;
}

export interface ProbeOptions {
  /** Repair what is safe to repair (see `DoctorOptions.fix`). */
  readonly fix: boolean;
  /** See `DoctorOptions.statisticsMinRows`. */
  readonly statisticsMinRows: number;
}

export interface MaintenanceDriver {
  /**
   * The backend's own consistency checks, run right after the schema checks (SQLite:
   * `integrity_check` and `foreign_key_check`; none on PostgreSQL, whose storage checks
   * itself).
   */
  readonly storageProbes: readonly DoctorProbe[];
  /** Checks run last, of the planner's view of the data (PostgreSQL: statistics). */
  readonly plannerProbes: readonly DoctorProbe[];
  /**
   * The live schema and the one the migrations build, read in the caller's write
   * transaction `x` (SQLite: an in-memory database; PostgreSQL: a scratch schema created
   * and dropped inside `x`).
   */
  schemas(x: Executor): Promise<[live: SchemaMap, reference: SchemaMap]>;
  /**
   * Keeps writers out until `x` commits, so a recount and its replacement see the same
   * rows (PostgreSQL: `LOCK TABLE … IN SHARE MODE`; SQLite: nothing, `BEGIN IMMEDIATE`
   * already holds the one write lock).
   */
  lockForRecount(x: Executor): Promise<void>;
  /**
   * Gives freed pages back to the file system (SQLite `VACUUM`, outside any
   * transaction) and says so; where the backend does that itself (PostgreSQL's
   * autovacuum) it does nothing and returns false.
   */
  vacuum(x: Executor): Promise<boolean>;
  /**
   * Writes a consistent copy of the store to `file`, which does not exist yet (SQLite
   * `VACUUM INTO`, one read snapshot). Only where {@link Capabilities.backup} says so.
   */
  copyTo(x: Executor, file: string): Promise<void>;
}

/** Facts of a backend, as plain data: callers read these, never the backend's kind. */
export interface Capabilities {
  /**
   * Claim locks the picked rows with `FOR UPDATE SKIP LOCKED` (PostgreSQL: concurrent
   * claimers skip each other's rows). When false the backend serializes writers
   * instead (SQLite: `BEGIN IMMEDIATE` takes the one write lock before the first read).
   */
  readonly skipLocked: boolean;
  /** Largest number of bound parameters one statement may carry. */
  readonly maxParameters: number;
  /**
   * `backup` can copy the store to a file ({@link MaintenanceDriver.copyTo}); where not,
   * the backend's own tools do (PostgreSQL: `pg_dump`).
   */
  readonly backup: boolean;
  /**
   * Every lease, availability, backoff and fence time is read in the statement itself,
   * from the server's clock (PostgreSQL: workers on many hosts whose clocks disagree).
   * When false the bound `now`, the host's clock, is the time (SQLite: one host).
   */
  readonly serverClock: boolean;
}
