import type { Store } from '../driver/backend.ts';
import { canonicalize } from '../input/canonical.ts';
import type { JsonObject } from '../input/json-value.ts';
import type { AsyncHandler, HandlerContext } from '../types.ts';
import { previewRedrive, type RedrivePreview, type RedriveSelection } from './redrive.ts';
import { runHandler } from './settle.ts';

/**
 * {@link previewRedrive} for a handler that may be async (a handler module): the same
 * selection rules and refusals (it runs `previewRedrive` to read and check the dead
 * messages), then the handler on each stored payload, outside any transaction. Changes
 * nothing. The handler's signal never fires.
 */
export async function previewRedriveWith(
  store: Store,
  selection: RedriveSelection,
  handler: AsyncHandler,
): Promise<RedrivePreview[]> {
  const seen = new Map<string, { payload: JsonObject; context: HandlerContext }>();
  const preview = await previewRedrive(store, selection, (payload, context) => {
    seen.set(context.eventId, { payload, context });
    return { category: 'preview', amountCents: 1 };
  });
  const signal = new AbortController().signal;
  const results: RedrivePreview[] = [];
  for (const row of preview) {
    const input = seen.get(row.eventId);
    if (input === undefined) {
      results.push(row); // the stored payload is not an object: already refused
      continue;
    }
    const result = await runHandler(handler, canonicalize(input.payload), {
      ...input.context,
      signal,
    });
    results.push(
      'effect' in result
        ? { eventId: row.eventId, accepted: true, code: null, detail: null }
        : {
            eventId: row.eventId,
            accepted: false,
            code: result.failure.code,
            detail: result.failure.detail ?? null,
          },
    );
  }
  return results;
}
