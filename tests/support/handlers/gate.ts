/**
 * Handler v1, except that the `ONCEQ_TEST_GATE_AT`-th message this process handles waits
 * at a gate: it writes `<ONCEQ_TEST_GATE_DIR>/reached`, then waits (bounded) until the
 * test creates `<ONCEQ_TEST_GATE_DIR>/open`. A test uses it to act on a store while a
 * worker is known to be mid-work (some messages done, one leased, others ready), without
 * racing the worker.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HandlerContext, JsonObject } from '@onceq/core';
import { handlers } from '@onceq/handler';

export const version = 'gate-test';

const AT = Number(process.env.ONCEQ_TEST_GATE_AT ?? 1);
const DIR = process.env.ONCEQ_TEST_GATE_DIR ?? '.';
/** The longest a gate waits for the test before it gives up (the test has failed then). */
const LIMIT_MS = 120_000;
let handled = 0;

export async function handle(payload: JsonObject, context: HandlerContext) {
  handled++;
  if (handled === AT) {
    writeFileSync(join(DIR, 'reached'), context.eventId);
    const deadline = Date.now() + LIMIT_MS;
    while (!existsSync(join(DIR, 'open'))) {
      if (Date.now() > deadline) throw new Error('the gate was never opened');
      await Bun.sleep(10);
    }
  }
  return handlers.v1(payload, context);
}
