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
  StoreBusyError,
  StoreUnavailableError,
  TemporaryFailure,
} from './errors.ts';
export { canonicalize, canonicalJson } from './json/canonical.ts';
export { JsonParseError, parseJson } from './json/parse.ts';
export {
  canonicalFloat,
  isJsonObject,
  JsonFloat,
  type JsonObject,
  type JsonValue,
} from './json/value.ts';
export { readSchemaVersion, SCHEMA_VERSION } from './migrations/index.ts';
export { isPostgresUrl, openStore } from './open.ts';
export { type ApplyManyResult, apply, applyMany } from './protocol/apply.ts';
export { type ClaimOptions, claim, claimMany } from './protocol/claim.ts';
export { enqueue } from './protocol/enqueue.ts';
export { type FailResult, fail } from './protocol/fail.ts';
export { type HoldClaimOptions, holdClaim } from './protocol/hold.ts';
export { dlq, show, status } from './protocol/inspect.ts';
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
export {
  previewRedrive,
  type RedrivePreview,
  type RedriveSelection,
  redrive,
} from './protocol/redrive.ts';
export type { Database, EffectsTable, MessagesTable } from './schema.ts';
export {
  FAILURE_KINDS,
  type FailureKind,
  isMessageState,
  MESSAGE_STATES,
  type MessageState,
} from './states.ts';
export {
  type ApplyOutcome,
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
} from './types.ts';
export { DEFAULT_BATCH, type WorkOptions, type WorkSummary, work } from './worker.ts';
