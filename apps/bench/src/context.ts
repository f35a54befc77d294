/** What every section of the benchmark reads and writes. */
import type { Options } from './options.ts';
import type { StoreFactory } from './scenarios/processing.ts';

/** One row of the closing targets table: met, missed, or not measured (null). */
export interface TargetRow {
  target: string;
  measured: string;
  met: boolean | null;
}

export interface SectionContext {
  opts: Options;
  /** Scratch directory of this run, removed at the end. */
  scratch: string;
  sqlite: StoreFactory;
  /** The PostgreSQL to measure, or null when it is skipped. */
  pgUrl: string | null;
  /** Why PostgreSQL is skipped, or null. */
  pgSkip: string | null;
  /** Lines of the report printed on stdout at the end. */
  out: string[];
  targets: TargetRow[];
  /** Everything written to bench-results/*.json. */
  results: Record<string, unknown>;
  log: (line: string) => void;
}
