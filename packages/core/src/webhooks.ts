/**
 * Webhooks: out (a completion's `deliver`, the outbox, the sender) and in (the ingest
 * fetch handler). docs/webhooks.md says what each guarantees.
 *
 * @module
 */
export {
  DEFAULT_SCHEDULE,
  type DeliveryEndpoint,
  EndpointConfigError,
  webhookId,
} from './delivery/endpoint.ts';
export {
  type AttemptView,
  DELIVERY_STATES,
  DeliveryNotDeadError,
  DeliveryNotFoundError,
  type DeliveryState,
  type DeliveryView,
  deliveryCounts,
  type EndpointCounts,
  enableEndpoint,
  listDeliveries,
  redriveDeliveries,
  showDelivery,
} from './delivery/inspect.ts';
export {
  type AttemptLog,
  type AttemptOutcome,
  type SenderOptions,
  type SenderSummary,
  sendDeliveries,
} from './delivery/sender.ts';
export type {
  /** Why {@link verifySignature} refused a request. */
  VerifyFailure,
} from './delivery/signature.ts';
export { signatureHeader, verifySignature } from './delivery/signature.ts';
export type {
  /** What one attempt wrote: its time, status, latency, response excerpt and error. */
  AttemptRecord,
  /** A delivery the sender leased, with its body and attempt. */
  ClaimedDelivery,
  /** How one attempt ended, as the sender records it. */
  DeliveryOutcome,
} from './driver/sql/deliveries.ts';
export { createIngest, type Ingest, type IngestOptions } from './ingest/handler.ts';
export { type IngestSource, SourceConfigError } from './ingest/source.ts';
