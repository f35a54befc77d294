/**
 * The soak's handler (`onceq worker --handler …/soak-handler.ts`): each event becomes one
 * row of `soak_applied` (the soak creates the table beside the store's), inserted by
 * onceq with the ACK, carrying when the producer made the event and when it was
 * applied. The rows outlive the dedup window (onceq forgets its own rows, never the
 * application's), so the soak can check that every event was applied exactly once.
 */
import type { Completion, HandlerContext, JsonObject } from '@onceq/core';

export const version = 'soak';

export function handle(payload: JsonObject, context: HandlerContext): Completion {
  return {
    insert: {
      soak_applied: {
        event_id: context.eventId,
        produced_ms: Number(payload.produced_ms),
        applied_ms: Date.now(),
      },
    },
  };
}
