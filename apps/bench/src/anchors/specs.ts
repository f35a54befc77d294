/** What an anchor worker process runs: which queue, where, and with which settings. */
export interface AnchorSpec {
  impl: 'plainjob' | 'graphile' | 'pgboss';
  /** SQLite file (plainjob) or PostgreSQL URL. */
  target: string;
  /** PostgreSQL schema the anchor's tables live in. */
  schema: string;
  /** graphile-worker: jobs in flight per process. */
  concurrency: number;
  /** graphile-worker: jobs fetched and locked per round trip (its batching); 0 = off. */
  localQueue: number;
  /**
   * graphile-worker: `completeJobBatchDelay` and `failJobBatchDelay`, ms: completions
   * gathered for this long go to the database in one statement; -1 = one per job.
   */
  completionBatchDelay: number;
  /** pg-boss: jobs per fetch and per completing transaction. */
  batch: number;
}

/** The anchors measured by `bun run bench --anchors`, and what each does per job. */
export const ANCHORS = [
  {
    name: 'plainjob',
    version: '0.0.14',
    settings: 'its defaults (WAL, synchronous=NORMAL), its claim and markJobAsDone per job',
    writes: 'job state only: no fence token, no effect row',
  },
  {
    name: 'graphile-worker',
    version: '0.18.0',
    settings:
      '"batched" = the configuration of its performance page (worker.graphile.org/docs/performance): concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0, prepared statements on (its default); "concurrency 1" = one job at a time, no local queue, no completion batching (its defaults)',
    writes: 'job completion only: its tasks cannot share the completing transaction',
  },
  {
    name: 'pg-boss',
    version: '12.38.0',
    settings: 'fetch batchSize 50; supervise, schedule and migrate off while measuring',
    writes: 'effect rows and complete() in one transaction (its `db` option)',
  },
] as const;
