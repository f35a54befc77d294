/**
 * The workspace's own entry (`@onceq/core/internal`): what the CLI, the console, the
 * bench and the demo use beyond the public root entry (maintenance, inspection lists,
 * the worker's log and signals, the JSONL transport, id policies). Not part of the
 * installed package: an application imports `@onceq/core` and its subpaths.
 *
 * @module
 */

export { type Clock, type ModelClock, modelClock, systemClock } from './clock.ts';
export type { BackendKind } from './driver/backend.ts';
export { BACKEND_KINDS } from './driver/backend.ts';
export type { Capabilities } from './driver/driver.ts';
export { assertSchemaName, DEFAULT_SCHEMA } from './driver/postgres/schema-name.ts';
export { describeTarget, ONCEQ_URL_PARAMETERS, redactUrl } from './driver/postgres/url.ts';
export {
  type BatchIssue,
  FAILURE_BRAND,
  type FailureShape,
  HandlerFailure,
  PrunedError,
  STORAGE_FAULTS,
  StorageError,
  type StorageFault,
  StoreBusyError,
  StoreUnavailableError,
} from './errors.ts';
export {
  type HandlerResult,
  handlersPastDeadline,
  MAX_SUMMARY_LENGTH,
  resultOf,
  runHandler,
} from './handler/run.ts';
export type { BatchEntry, ParsedBatch } from './input/batch.ts';
export {
  MAX_BATCH_BYTES,
  MAX_BATCH_LINES,
  MAX_PAYLOAD_BYTES,
  oversizedLine,
  parseBatch,
} from './input/batch.ts';
export { canonicalize, canonicalJson } from './input/canonical.ts';
export { canonicalFloat, isJsonObject, type JsonValue } from './input/json-value.ts';
export { assignKeys, type KeyOptions } from './input/ordering-key.ts';
export { JsonParseError, parseJson } from './input/parse-json.ts';
export { localTime } from './local-time.ts';
export {
  BackupRefusedError,
  type BackupResult,
  backup,
  statusOfFile,
} from './maintenance/backup.ts';
export { type DoctorOptions, doctor } from './maintenance/doctor.ts';
export {
  type DoctorReport,
  FINDING_SEVERITIES,
  type Finding,
  type FindingSeverity,
} from './maintenance/doctor-types.ts';
export { payloadSha256 } from './maintenance/enqueue-checks.ts';
export {
  describeIdPolicy,
  formatIdPolicy,
  GENERAL_POLICY,
  ID_POLICY_KINDS,
  type IdPolicy,
  type IdPolicyKind,
  InvalidIdPolicyError,
  idMatcher,
  LESSON_POLICY,
  MAX_EVENT_ID_BYTES,
  MAX_PATTERN_LENGTH,
  parseIdPolicy,
} from './maintenance/id-policy.ts';
export { getIdPolicy, IdPolicyRefusedError, setIdPolicy } from './maintenance/meta.ts';
export {
  DEFAULT_PRUNE_CHUNK,
  DEFAULT_PRUNE_DUTY_CYCLE,
  PRUNABLE_STATES,
  type PrunableState,
  PruneArgumentError,
  type PruneOptions,
  type PruneResult,
  prune,
} from './maintenance/prune.ts';
export { SCHEMA_VERSION } from './migrations/index.ts';
export { printable } from './printable.ts';
export { type QueueAges, queueAges } from './queue/ages.ts';
export { type BlockedKey, type BlockedKeys, blockedKeys } from './queue/blocked.ts';
export { type ClaimOptions, claimMany } from './queue/claim.ts';
export {
  type ClaimedLease,
  type ClaimResult,
  type CompleteOptions,
  type CompleteResult,
  complete,
} from './queue/complete.ts';
export { type NextDue, nextDue, type WaitingReport, waitingReport } from './queue/due.ts';
export type { EnqueueInput } from './queue/enqueue.ts';
export { type ExtendedLease, type ExtendManyResult, extendMany } from './queue/extend.ts';
export type { FailResult } from './queue/fail.ts';
export { type HoldClaimOptions, holdClaim } from './queue/hold.ts';
export { countDlq } from './queue/inspect.ts';
export {
  countMessages,
  LIST_ORDERS,
  ListArgumentError,
  type ListOptions,
  type ListOrder,
  listMessages,
  MAX_PAGE,
  type MessageFilter,
  type MessagePage,
} from './queue/list.ts';
export type { RedrivePreview, RedriveSelection } from './queue/redrive.ts';
export { type ReleaseManyResult, release, releaseMany } from './queue/release.ts';
export { type QueueSnapshot, queueSnapshot } from './queue/snapshot.ts';
export type { Database, EffectsTable, MessagesTable, MetaTable } from './schema.ts';
export {
  FAILURE_KINDS,
  type FailureKind,
  isMessageState,
  MESSAGE_STATES,
  type MessageState,
  reportedStates,
} from './states.ts';
export { isPostgresUrl } from './target.ts';
export {
  type ApplyOutcome,
  DEFAULT_PROTOCOL,
  type EnqueueResult,
  type FailInput,
  type LeaseRef,
  type MessageView,
  type ProtocolOptions,
  type StatusReport,
} from './types.ts';
export {
  createLog,
  LOG_FORMATS,
  type LogFields,
  type LogFormat,
  silentLog,
  type WorkerLog,
} from './worker/log.ts';
export type { PruneSchedule } from './worker/prune-schedule.ts';
export { STOP_SIGNALS, stopOnSignals } from './worker/signals.ts';
export type { WorkSummary } from './worker/work.ts';
export type { StopOptions, StopResult, WorkerSummary } from './worker/worker.ts';
export { DEFAULT_BATCH, STUCK_AFTER_LEASES } from './worker/worker.ts';
