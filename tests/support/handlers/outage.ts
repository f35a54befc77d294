/**
 * A handler module for policy tests: the provider it calls is down (a temporary failure,
 * `provider_down`) until the file `up` exists in the working directory; then v1's rules.
 */
import { existsSync } from 'node:fs';
import { type HandlerContext, type JsonObject, TemporaryFailure } from '@onceq/core';
import { v1 } from '@onceq/handler';

export const version = 'outage-test';

export async function handle(payload: JsonObject, context: HandlerContext) {
  if (!existsSync('up')) throw new TemporaryFailure('provider_down', 'the provider is down');
  return v1(payload, context);
}
