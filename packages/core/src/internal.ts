/**
 * The workspace's own entry (`@onceq/core/internal`): what the CLI, the console, the
 * bench and the demo use beyond the public entries (the JSONL transport, id policies as
 * the CLI spells them, text for people, the CLI's own commands and listeners), and what the workspace's tests call beneath the
 * operations (the driver's statements, the state machine, the handler's result rules).
 * Not part of the installed package (scripts/pack.ts ships only the public entries): an
 * application imports `@onceq/core` and its subpaths, a test of this repository imports
 * by these workspace names and never by a path into `packages/core/src`.
 *
 * @module
 */

export { type ModelClock, modelClock, systemClock } from './clock.ts';
export { resolveEndpoint } from './delivery/endpoint.ts';
export { BACKEND_KINDS } from './driver/backend.ts';
export type { Capabilities, CompletionWrite } from './driver/driver.ts';
export type { Executor } from './driver/executor.ts';
export { connectFailure, mapQueryError } from './driver/postgres/errors.ts';
export { loadPostgresDriver } from './driver/postgres/load.ts';
export { postgresTemplate } from './driver/postgres/sql/complete.ts';
export { postgresDriver } from './driver/postgres/statements.ts';
export {
  connectionSettings,
  ONCEQ_URL_PARAMETERS,
  passwordsIn,
  scrub,
} from './driver/postgres/url.ts';
export { redrive as redriveStatement } from './driver/shared-statements.ts';
export { HELD_RECHECK_SECONDS } from './driver/sql/deliveries.ts';
export {
  postgresDialect,
  type SqlDialect,
  type SqlText,
  sqliteDialect,
} from './driver/sql-text.ts';
export { BunSqliteDialect } from './driver/sqlite/dialect.ts';
export { insertMessages } from './driver/sqlite/sql/insert-messages.ts';
export {
  FAILURE_BRAND,
  HandlerFailure,
  PrunedError,
  STORAGE_FAULTS,
  StorageError,
  type StorageFault,
} from './errors.ts';
export { checkRows, recordRows } from './handler/completion-rows.ts';
export {
  effectViolation,
  MAX_CATEGORY_LENGTH,
  MAX_EFFECT_CENTS,
} from './handler/effect-rules.ts';
export {
  effectResult,
  type HandlerResult,
  handlerInput,
  handlersPastDeadline,
  MAX_SUMMARY_LENGTH,
  ownCompletion,
  resultOf,
  runHandler,
} from './handler/run.ts';
export { resolveSource } from './ingest/source.ts';
export {
  MAX_BATCH_BYTES,
  MAX_BATCH_ISSUES,
  MAX_BATCH_LINES,
  MAX_PAYLOAD_BYTES,
  oversizedLine,
  parseBatch,
} from './input/batch.ts';
export { canonicalize, canonicalJson, compareCodePoints } from './input/canonical.ts';
export {
  describeIdPolicy,
  formatIdPolicy,
  GENERAL_POLICY,
  ID_POLICY_KINDS,
  type IdPolicyKind,
  InvalidIdPolicyError,
  idMatcher,
  LESSON_POLICY,
  MAX_EVENT_ID_BYTES,
  MAX_PATTERN_LENGTH,
  parseIdPolicy,
} from './input/id-policy.ts';
export { canonicalFloat, isJsonObject, type JsonValue } from './input/json-value.ts';
export { assignKeys, type KeyOptions } from './input/ordering-key.ts';
export { JsonParseError, parseJson } from './input/parse-json.ts';
export { listenAlone } from './listen.ts';
export { duration, localTime, relativeTime } from './local-time.ts';
export {
  afterFailure,
  ENQUEUED_STATES,
  fenceViolation,
  inClaimOrder,
  TRANSITIONS,
} from './machine.ts';
export { statusOfFile } from './maintenance/backup.ts';
export { findCounterDrift } from './maintenance/counters.ts';
export { checkConnections } from './maintenance/doctor.ts';
export { payloadSha256, uuidV7Millis } from './maintenance/enqueue-checks.ts';
export { checkDedupWindow, DEFAULT_PRUNE_CHUNK } from './maintenance/prune.ts';
export { SCHEMA_VERSION } from './migrations/index.ts';
export { BACKOFF_SYNTAX, durationSeconds, ON_DEAD, parseBackoff } from './policy.ts';
export { printable } from './printable.ts';
export { type ClaimOptions, claimMany } from './queue/claim.ts';
export {
  type ClaimedLease,
  type ClaimResult,
  type CompleteOptions,
  type CompleteResult,
  complete,
} from './queue/complete.ts';
export { type NextDue, nextDue } from './queue/due.ts';
export { type ExtendManyResult, extendMany } from './queue/extend.ts';
export { type HoldClaimOptions, holdClaim } from './queue/hold.ts';
export { type ReleaseManyResult, release, releaseMany } from './queue/release.ts';
export { DEFAULT_QUEUE, isQueueName, QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from './queues.ts';
export type { Database, EffectsTable, MessagesTable, MetaTable } from './schema.ts';
export { FAILURE_KINDS } from './states.ts';
export { type Align, type Alignment, type TextTableOptions, textTable } from './text-table.ts';
export { DEFAULT_PROTOCOL } from './types.ts';
export { Wakeup } from './worker/wakeup.ts';
export { DEFAULT_BATCH, STUCK_AFTER_LEASES } from './worker/worker.ts';
