import type { Store } from '../backend/backend.ts';
import { type ParsedBatch, parseBatch } from '../batch/parse-batch.ts';
import { type BatchIssue, BatchRejectedError } from '../errors.ts';
import type { EnqueueResult } from '../types.ts';

/** Rows per INSERT: 8 columns each, well under both backends' parameter limits. */
const INSERT_CHUNK = 500;

/**
 * Validates and stores a JSONL batch, all or nothing (SPEC §2).
 *
 * The whole envelope is validated before any transaction. Then, in one write
 * transaction: an event id already stored with the same canonical payload (whatever its
 * state) is a duplicate, counted and skipped; with a different payload it is a conflict
 * and the **whole batch** is rejected, new lines included, with nothing written.
 */
export async function enqueue(
  store: Store,
  input: Uint8Array | string | ParsedBatch,
): Promise<EnqueueResult> {
  const batch = isParsed(input) ? input : parseBatch(input);
  return store.writeTransaction(async (trx) => {
    const now = store.clock();
    const stored = new Map<string, string>();
    for (let i = 0; i < batch.entries.length; i += store.capabilities.maxParameters) {
      const ids = batch.entries
        .slice(i, i + store.capabilities.maxParameters)
        .map((e) => e.eventId);
      const rows = await trx
        .selectFrom('messages')
        .select(['event_id', 'payload'])
        .where('event_id', 'in', ids)
        .execute();
      for (const row of rows) stored.set(row.event_id, row.payload);
    }
    const conflicts: BatchIssue[] = [];
    const fresh = batch.entries.filter((entry) => {
      const existing = stored.get(entry.eventId);
      if (existing === undefined) return true;
      if (existing !== entry.payload) {
        conflicts.push({
          line: entry.line,
          reason: `event_id ${entry.eventId} is already stored with a different payload (a correction needs a new event id)`,
        });
      }
      return false;
    });
    if (conflicts.length > 0) throw new BatchRejectedError(conflicts);
    for (let i = 0; i < fresh.length; i += INSERT_CHUNK) {
      await trx
        .insertInto('messages')
        .values(
          fresh.slice(i, i + INSERT_CHUNK).map((entry) => ({
            event_id: entry.eventId,
            payload: entry.payload,
            state: 'ready' as const,
            attempts: 0,
            generation: 0,
            available_at: now,
            lease_until: null,
            enqueued_at: now,
            updated_at: now,
          })),
        )
        .execute();
    }
    return {
      accepted: fresh.length,
      duplicates: batch.duplicates + (batch.entries.length - fresh.length),
    };
  });
}

function isParsed(input: Uint8Array | string | ParsedBatch): input is ParsedBatch {
  return typeof input === 'object' && !(input instanceof Uint8Array) && 'entries' in input;
}
