/**
 * @onceq/core: the onceq queue. Public API only; see START_HERE.md for the map.
 */
export type {
  BackendCapabilities,
  BackendKind,
  OpenStoreOptions,
  Store,
} from './backend/backend.ts';
export { BACKEND_KINDS } from './backend/backend.ts';
export { assertSchemaName, DEFAULT_SCHEMA } from './backend/postgres/schema-name.ts';
export { describeTarget, redactUrl } from './backend/postgres/url.ts';
export type { BatchEntry, ParsedBatch } from './batch/parse-batch.ts';
export {
  MAX_BATCH_BYTES,
  MAX_BATCH_LINES,
  MAX_PAYLOAD_BYTES,
  parseBatch,
} from './batch/parse-batch.ts';
export { type Clock, type ModelClock, modelClock, systemClock } from './clock.ts';
export {
  type BatchIssue,
  BatchRejectedError,
  HandlerFailure,
  LeaseLostError,
  NotDeadError,
  NotFoundError,
  OnceqError,
  PermanentFailure,
  PrunedError,
  STORAGE_FAULTS,
  StorageError,
  type StorageFault,
  StoreBusyError,
  StoreUnavailableError,
  TemporaryFailure,
} from './errors.ts';
export {
  ARMED_FAULT,
  crashPoint,
  FAULT_EXIT_CODE,
  FAULT_POINTS,
  type FaultPoint,
  onCrashPoint,
} from './faults.ts';
export { canonicalize, canonicalJson } from './json/canonical.ts';
export { JsonParseError, parseJson } from './json/parse.ts';
export {
  canonicalFloat,
  isJsonObject,
  JsonFloat,
  type JsonObject,
  type JsonValue,
} from './json/value.ts';
export { SCHEMA_VERSION } from './migrations/index.ts';
export { openStore } from './open.ts';
export { type QueueAges, queueAges } from './protocol/ages.ts';
export { type ApplyManyResult, apply, applyMany } from './protocol/apply.ts';
export { type ClaimOptions, claim, claimMany } from './protocol/claim.ts';
export { type NextDue, nextDue, type WaitingReport, waitingReport } from './protocol/due.ts';
export { enqueue } from './protocol/enqueue.ts';
export {
  type ExtendedLease,
  type ExtendManyResult,
  extend,
  extendMany,
} from './protocol/extend.ts';
export { type FailResult, fail } from './protocol/fail.ts';
export { type HoldClaimOptions, holdClaim } from './protocol/hold.ts';
export { countDlq, dlq, show, status } from './protocol/inspect.ts';
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
} from './protocol/list.ts';
export { previewRedriveWith } from './protocol/preview.ts';
export {
  previewRedrive,
  type RedrivePreview,
  type RedriveSelection,
  redrive,
} from './protocol/redrive.ts';
export { type ReleaseManyResult, release, releaseMany } from './protocol/release.ts';
export {
  applyAsync,
  type HandlerResult,
  runHandler,
  type Settlement,
  settleMany,
} from './protocol/settle.ts';
export { type QueueSnapshot, queueSnapshot } from './protocol/snapshot.ts';
export type { Database, EffectsTable, MessagesTable, MetaTable } from './schema.ts';
export {
  createLog,
  LOG_FORMATS,
  type LogFields,
  type LogFormat,
  silentLog,
  type WorkerLog,
} from './service/log.ts';
export {
  type MetricsServer,
  OUTCOMES,
  type Outcome,
  serveMetrics,
  WorkerMetrics,
} from './service/metrics.ts';
export type { PruneSchedule } from './service/prune-schedule.ts';
export { STOP_SIGNALS, stopOnSignals } from './service/signals.ts';
export {
  type StopOptions,
  type StopResult,
  Worker,
  type WorkerOptions,
  type WorkerSummary,
} from './service/worker.ts';
export {
  FAILURE_KINDS,
  type FailureKind,
  isMessageState,
  MESSAGE_STATES,
  type MessageState,
} from './states.ts';
export { BackupRefusedError, type BackupResult, backup, statusOfFile } from './streams/backup.ts';
export { type DoctorOptions, doctor } from './streams/doctor.ts';
export {
  type DoctorReport,
  FINDING_SEVERITIES,
  type Finding,
  type FindingSeverity,
} from './streams/doctor-types.ts';
export { payloadSha256 } from './streams/enqueue-checks.ts';
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
} from './streams/id-policy.ts';
export { getIdPolicy, IdPolicyRefusedError, setIdPolicy } from './streams/meta.ts';
export {
  DEFAULT_PRUNE_CHUNK,
  DEFAULT_PRUNE_DUTY_CYCLE,
  PRUNABLE_STATES,
  type PrunableState,
  PruneArgumentError,
  type PruneOptions,
  type PruneResult,
  prune,
} from './streams/prune.ts';
export { isPostgresUrl } from './target.ts';
export {
  type ApplyOutcome,
  type AsyncHandler,
  DEFAULT_PROTOCOL,
  type Effect,
  type EnqueueResult,
  type FailInput,
  type Handler,
  type HandlerContext,
  type Lease,
  type LeaseRef,
  type MessageView,
  type ProtocolOptions,
  type StatusReport,
  type WorkerHandlerContext,
} from './types.ts';
export { DEFAULT_BATCH, type WorkOptions, type WorkSummary, work } from './worker.ts';
