/**
 * Webhooks: out (a completion's `deliver`, the outbox, the sender) and in (the ingest
 * fetch handler). docs/webhooks.md says what each guarantees.
 *
 * @module
 */
export type { Delivery } from './delivery/declare.ts';
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
  type SenderOptions,
  type SenderSummary,
  sendDeliveries,
} from './delivery/sender.ts';
export { signatureHeader, verifySignature } from './delivery/signature.ts';
export { createIngest, type Ingest, type IngestOptions } from './ingest/handler.ts';
export { type IngestSource, SourceConfigError } from './ingest/source.ts';
