/**
 * `@onceq/core/admin`: operating a store, what `onceq doctor`, `backup`, `prune`, `list`
 * and `status` and the web console run, for your own tools: the health check, a SQLite
 * backup, pruning and the dedup window, message listings with filters and cursors, and
 * the queue's figures (counts per queue, ages, blocked keys, what is waiting). Every
 * function takes an open store (`openStore` of the root entry). docs/operations.md says
 * when to run each.
 *
 * @module
 */
export {
  /** The backup was refused before anything was written (file exists, PostgreSQL). */
  BackupRefusedError,
  /** What {@link backup} wrote: the file, its size and the copy's own status. */
  type BackupResult,
  /** A consistent copy of a SQLite store while workers run (`VACUUM INTO`, never overwrites). */
  backup,
} from './maintenance/backup.ts';
export {
  /** Options of {@link doctor}: `fix`, the stale-lease age, PostgreSQL's statistics bound. */
  type DoctorOptions,
  /** Checks a store (schema, storage, invariants, counters, leases, connections); reads only unless `fix`. */
  doctor,
} from './maintenance/doctor.ts';
export {
  /** A PostgreSQL server's connections as {@link doctor} counts them. */
  type ConnectionCount,
  /** What {@link doctor} found: the checks run and one finding per problem. */
  type DoctorReport,
  /** The severities of a finding, worst first: `problem`, `warning`, `info`. */
  FINDING_SEVERITIES,
  /** One finding: its check, severity and one sentence. */
  type Finding,
  /** `'problem' | 'warning' | 'info'`. */
  type FindingSeverity,
} from './maintenance/doctor-types.ts';
export {
  /** The shortest dedup window without `force`: 3 days. */
  DEDUP_WINDOW_FLOOR_SECONDS,
  /** Default {@link PruneOptions.dutyCycle}: prune busy at most a tenth of the time. */
  DEFAULT_PRUNE_DUTY_CYCLE,
  /** How far the store has forgotten (its dedup window): Unix seconds, 0 when it never has. */
  forgottenBefore,
  /** The finished states prune may touch: `done`, `dead`. */
  PRUNABLE_STATES,
  /** `'done' | 'dead'`. */
  type PrunableState,
  /** Prune was called without anything to prune or with a bad value; nothing changed. */
  PruneArgumentError,
  /** Options of {@link prune}: the ages, queue, dry run, chunk size, duty cycle, dedup window. */
  type PruneOptions,
  /** What {@link prune} pruned (or would), per state, with its cutoffs. */
  type PruneResult,
  /** Removes the payloads of finished messages older than the given ages, keeping their dedup. */
  prune,
} from './maintenance/prune.ts';
export {
  /** What a store takes on disk: bytes, events live and pruned, bytes per event of each. */
  type StorageUse,
  /** The store's size on disk, its live and pruned events and what each costs (`status --json`'s `storage`). */
  storageUse,
} from './maintenance/storage.ts';
export {
  /** One ordering key held by its dead head: the head, since when, and how many wait behind it. */
  type BlockedKey,
  /** How many keys are blocked, and the first of them. */
  type BlockedKeys,
  /** The ordering keys whose head is dead (of one queue with `{ queue }`), one read snapshot. */
  blockedKeys,
} from './queue/blocked.ts';
export {
  /** What {@link waitingReport} found: messages in backoff and leases held, with their next times. */
  type WaitingReport,
  /** Why nothing is claimable at `now`: messages waiting out a backoff and leases still held. */
  waitingReport,
} from './queue/due.ts';
export {
  /** How many dead messages there are (of one queue with `{ queue }`). */
  countDlq,
} from './queue/inspect.ts';
export {
  /** How many messages match a filter. */
  countMessages,
  /** The orders a listing takes: `id`, `oldest`, `newest`. */
  LIST_ORDERS,
  /** A listing was asked with a bad filter, order, limit or cursor. */
  ListArgumentError,
  /** Options of {@link listMessages}: the filter, order, limit and cursor. */
  type ListOptions,
  /** `'id' | 'oldest' | 'newest'`. */
  type ListOrder,
  /** One page of messages matching a filter, with the cursor of the next page. */
  listMessages,
  /** The most messages one page holds: 500. */
  MAX_PAGE,
  /** Which messages a listing or count takes: state, queue, pruned, error code, id prefix, times. */
  type MessageFilter,
  /** One page of {@link listMessages}: its messages and the next page's cursor (null at the end). */
  type MessagePage,
} from './queue/list.ts';
export {
  /** Counts by state for every queue of the store. */
  countsByQueue,
  /** {@link queueSnapshot}'s figures: the status report plus the oldest ready, next due and oldest dead times. */
  type QueueSnapshot,
  /** Counts, money and the queue's ages in one statement: what `status`, the console and `/metrics` read. */
  queueSnapshot,
} from './queue/snapshot.ts';
export {
  /** True when a value is one of {@link MESSAGE_STATES}. */
  isMessageState,
  /** Every state a message can be in: `ready`, `leased`, `done`, `dead`, `waiting`, `skipped`. */
  MESSAGE_STATES,
  /** The states a status report holds, in {@link MESSAGE_STATES} order. */
  reportedStates,
} from './states.ts';
