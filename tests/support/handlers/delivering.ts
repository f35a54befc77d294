/**
 * A handler module for the outbox's worker storm (`--handler
 * tests/support/handlers/delivering.ts`): each message declares one delivery to the
 * endpoint `hooks`, derived from its payload by {@link declaredDelivery}, which the test
 * reads too. It notes on stderr when it starts and when it returns (`handling E0001`,
 * `handled E0001`) and works a moment in between, so a test can kill a worker while it
 * holds a lease mid-handler. No onceq code is imported at run time.
 */
import type { Completion, HandlerContext, JsonObject } from '@onceq/core';

export const version = 'delivering-test';

/** How long a handler works, in ms: the window a kill aims at. */
const WORK_MS = 40;

/**
 * The one delivery a message declares: every third amount (in whole units) is a receipt,
 * plain text under the key `receipt`; the others are a JSON object under the default key.
 */
export function declaredDelivery(
  eventId: string,
  payload: JsonObject,
): { to: 'hooks'; body: string | JsonObject; key?: string } {
  const cents = Number(payload.amount_cents);
  const category = String(payload.category);
  if ((cents / 100) % 3 === 0) {
    return {
      to: 'hooks',
      body: `receipt for ${eventId}: ${cents} cents (${category})`,
      key: 'receipt',
    };
  }
  return { to: 'hooks', body: { event: eventId, category, cents } };
}

export async function handle(payload: JsonObject, context: HandlerContext): Promise<Completion> {
  process.stderr.write(`handling ${context.eventId}\n`);
  await Bun.sleep(WORK_MS);
  const delivery = declaredDelivery(context.eventId, payload);
  process.stderr.write(`handled ${context.eventId}\n`);
  return { deliver: [delivery], summary: `delivers ${context.eventId}` };
}
