import type { Store } from '../backend/backend.ts';
import { type ParsedBatch, parseBatch } from '../batch/parse-batch.ts';
import { type BatchIssue, BatchRejectedError } from '../errors.ts';
import { crashPoint } from '../faults.ts';
import { checkIds, payloadSha256, prunedConflict } from '../streams/enqueue-checks.ts';
import { getIdPolicy, readIdPolicyRow } from '../streams/meta.ts';
import type { EnqueueResult } from '../types.ts';

/**
 * Validates and stores a JSONL batch, all or nothing (docs/protocol.md §2).
 *
 * The whole envelope is validated before any transaction. Then, in one write
 * transaction: an event id already stored with the same canonical payload (whatever its
 * state) is a duplicate, counted and skipped; with a different payload it is a conflict
 * and the **whole batch** is rejected, new lines included, with nothing written.
 *
 * Every event id must fit the store's id policy (`onceq_meta`, read in the same
 * transaction); a refused id rejects the batch naming its line and the policy. A message
 * pruned by `onceq prune` still deduplicates: its payload is gone, so the new payload's
 * SHA-256 is compared with the stored hash, and a mismatch is a conflict that says the
 * original was pruned.
 */
export async function enqueue(
  store: Store,
  input: Uint8Array | string | ParsedBatch,
): Promise<EnqueueResult> {
  // Parsed here with the store's policy, so id and envelope problems are reported
  // together; checked again inside the transaction against the policy as it is then.
  const batch = isParsed(input) ? input : parseBatch(input, await getIdPolicy(store));
  return store.transact(async (x) => {
    const now = store.clock();
    const [policyRow] = await x.rows(readIdPolicyRow, {});
    checkIds(batch.entries, policyRow?.value);
    const stored = new Map<
      string,
      { payload: string | null; sha256: string | null; prunedAt: number | null }
    >();
    const ids = batch.entries.map((e) => e.eventId);
    for (const row of await store.statements.lookupForEnqueue(x, ids)) {
      stored.set(row.event_id, {
        payload: row.payload,
        sha256: row.payload_sha256,
        prunedAt: row.pruned_at,
      });
    }
    const conflicts: BatchIssue[] = [];
    const fresh = batch.entries.filter((entry) => {
      const existing = stored.get(entry.eventId);
      if (existing === undefined) return true;
      if (existing.payload === null) {
        // Pruned: only the tombstone's hash is left to compare with.
        if (existing.sha256 !== payloadSha256(entry.payload)) {
          conflicts.push(prunedConflict(entry, existing.prunedAt));
        }
      } else if (existing.payload !== entry.payload) {
        conflicts.push({
          line: entry.line,
          reason: `event_id ${entry.eventId} is already stored with a different payload (a correction needs a new event id)`,
        });
      }
      return false;
    });
    if (conflicts.length > 0) throw new BatchRejectedError(conflicts);
    await store.statements.insertMessages(x, fresh, now);
    if (fresh.length > 0) await store.statements.wake(x);
    crashPoint('mid-enqueue');
    return {
      accepted: fresh.length,
      duplicates: batch.duplicates + (batch.entries.length - fresh.length),
    };
  });
}

function isParsed(input: Uint8Array | string | ParsedBatch): input is ParsedBatch {
  return typeof input === 'object' && !(input instanceof Uint8Array) && 'entries' in input;
}
