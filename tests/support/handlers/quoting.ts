/**
 * A handler module whose failure quotes a payload value as it is
 * (`--handler tests/support/handlers/quoting.ts`): it rejects every message
 * permanently with the message `cannot use note <note>`, newlines and all, as a careless
 * handler would.
 */
import type { JsonObject } from '../../../packages/core/src/index.ts';
import { PermanentFailure } from '../../../packages/core/src/index.ts';

export const version = 'quoting-test';

export function handle(payload: JsonObject): never {
  throw new PermanentFailure('bad_note', `cannot use note ${String(payload.note)}`);
}
