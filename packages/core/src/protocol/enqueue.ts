import type { Store } from '../backend/backend.ts';
import { defineStatement } from '../backend/prepared.ts';
import { type ParsedBatch, parseBatch } from '../batch/parse-batch.ts';
import { type BatchIssue, BatchRejectedError } from '../errors.ts';
import { crashPoint } from '../faults.ts';
import { checkIds, payloadSha256, prunedConflict } from '../streams/enqueue-checks.ts';
import { getIdPolicy, readIdPolicyRow } from '../streams/meta.ts';
import { notifyWorkers, stateLiteral } from '../transitions.ts';
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
    for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
      const chunk = ids.slice(i, i + LOOKUP_CHUNK);
      // Pad to the fixed arity (a repeated id in IN is harmless): one compiled lookup.
      while (chunk.length < LOOKUP_CHUNK) chunk.push(chunk[0] as string);
      for (const row of await x.rows(lookup, { ids: chunk }, LOOKUP_CHUNK)) {
        stored.set(row.event_id, {
          payload: row.payload,
          sha256: row.payload_sha256,
          prunedAt: row.pruned_at,
        });
      }
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
    for (let i = 0; i < fresh.length; ) {
      const size = insertSize(fresh.length - i);
      const rows = fresh.slice(i, i + size);
      await x.changes(
        insertMessages,
        { ids: rows.map((r) => r.eventId), payloads: rows.map((r) => r.payload), now },
        size,
      );
      i += size;
    }
    if (fresh.length > 0) await notifyWorkers(store, x);
    crashPoint('mid-enqueue');
    return {
      accepted: fresh.length,
      duplicates: batch.duplicates + (batch.entries.length - fresh.length),
    };
  });
}

/** Ids per lookup statement. */
const LOOKUP_CHUNK = 250;
/**
 * Rows per INSERT: the largest chunk; a remainder goes in power-of-two chunks. 500 (was
 * 128): a full 1000-line batch is two statements instead of eight (on PostgreSQL two
 * round trips); on SQLite a row binds two values (backend/placeholders.ts), so 500 rows
 * are 1001 parameters, far below the 32,766 limit.
 */
const INSERT_CHUNK = 500;

/** The next insert's row count: the full chunk, else the largest power of two that fits. */
function insertSize(remaining: number): number {
  if (remaining >= INSERT_CHUNK) return INSERT_CHUNK;
  return 2 ** Math.floor(Math.log2(remaining));
}

const lookup = defineStatement<{
  event_id: string;
  payload: string | null;
  payload_sha256: string | null;
  pruned_at: number | null;
}>('enqueue-lookup', ({ db, p, n }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'payload_sha256', 'pruned_at'])
    .where('event_id', 'in', p.list<string>('ids', n)),
);

const insertMessages = defineStatement('enqueue-insert', ({ db, p, n }) => {
  const payloads = p.list<string>('payloads', n);
  const now = p.value<number>('now');
  return db.insertInto('messages').values(
    p.list<string>('ids', n).map((id, i) => ({
      event_id: id,
      payload: payloads[i] as string,
      state: stateLiteral('ready'),
      attempts: 0,
      generation: 0,
      available_at: now,
      lease_until: null,
      enqueued_at: now,
      updated_at: now,
    })),
  );
});

function isParsed(input: Uint8Array | string | ParsedBatch): input is ParsedBatch {
  return typeof input === 'object' && !(input instanceof Uint8Array) && 'entries' in input;
}
