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
    settings: 'runner with localQueue.size 50 and concurrency 10 ("batched"), or concurrency 1',
    writes: 'job completion only: its tasks cannot share the completing transaction',
  },
  {
    name: 'pg-boss',
    version: '12.38.0',
    settings: 'fetch batchSize 50; supervise, schedule and migrate off while measuring',
    writes: 'effect rows and complete() in one transaction (its `db` option)',
  },
] as const;
