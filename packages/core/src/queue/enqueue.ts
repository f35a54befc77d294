import type { Store } from '../driver/backend.ts';
import type { CallerTransaction } from '../driver/caller-transaction.ts';
import type { EnqueueDelay, NewMessage, StoredForEnqueue } from '../driver/driver.ts';
import type { Executor } from '../driver/executor.ts';
import { type BatchIssue, BatchRejectedError, type RejectionUnit } from '../errors.ts';
import { type BatchEntry, MAX_BATCH_ISSUES, type ParsedBatch, parseBatch } from '../input/batch.ts';
import { type EventInput, parseEvents } from '../input/events.ts';
import { formatIdPolicy, type IdPolicy, LESSON_POLICY, parseIdPolicy } from '../input/id-policy.ts';
import { assignKeys, type KeyOptions } from '../input/ordering-key.ts';
import {
  beforeWindow,
  checkIds,
  madeBeforeWindow,
  payloadSha256,
  prunedConflict,
  uuidV7Millis,
} from '../maintenance/enqueue-checks.ts';
import { getIdPolicy } from '../maintenance/meta.ts';
import { DEFAULT_QUEUE, isQueueName, keyLockName, QUEUE_NAME_RULE } from '../queues.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { EnqueueResult } from '../types.ts';

/** What {@link enqueue} stores: JSONL bytes or text, event objects, or a parsed batch. */
export type EnqueueInput = Uint8Array | string | readonly EventInput[] | ParsedBatch;

export interface EnqueueOptions extends KeyOptions {
  /**
   * The queue the batch's events go to (docs/worker.md, "Queues"). Default `default`. An
   * event id is unique in the whole store: the same id already stored in another queue
   * is a conflict naming that queue.
   */
  queue?: string;
  /**
   * Delayed events: the batch's new messages become claimable no earlier than this Unix
   * second. Default: now.
   */
  availableAt?: number;
  /**
   * Delayed events: the batch's new messages become claimable this many seconds after
   * enqueue's now (on PostgreSQL the server's clock). Default 0. With
   * {@link availableAt}, the later of the two.
   */
  delaySeconds?: number;
  /**
   * A transaction the caller holds open on the store's database (`transaction(store, fn)`'s
   * `tx` on either backend; on PostgreSQL also a Kysely transaction or a `pg` client after
   * `BEGIN`): the events are written in it, so they exist if and only if it commits. A
   * rejected batch rolls back what enqueue wrote (a savepoint) and throws; the caller's
   * own writes are rolled back when the caller lets the error end its transaction.
   * Nothing is retried. Default: enqueue's own write transaction. docs/handlers.md,
   * "Enqueue in your transaction".
   */
  transaction?: CallerTransaction;
}

/**
 * Validates and stores a batch of events, all or nothing (docs/protocol.md §2): JSONL
 * bytes or text, or event objects `{ eventId, payload }` (input/events.ts: the same
 * rules and canonical form; a JS number is an integer when integral, else a float, and
 * `JsonFloat` writes a float such as `10000.0`).
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
 *
 * The write goes first (see {@link insertNew}): a batch of new lines is never read
 * back. A conflict throws, which rolls the whole transaction back, rows already
 * inserted included.
 */
export async function enqueue(
  store: Store,
  input: EnqueueInput,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const within = options.transaction;
  // Outside a caller's transaction the batch is parsed here, before any transaction, with
  // the store's policy, so id and envelope problems are reported together; the policy is
  // checked again inside the transaction as it is then. In the caller's transaction
  // nothing is read on the store's own connection (on SQLite that may be the very
  // connection the caller's transaction holds): the batch is parsed inside it, with the
  // policy that transaction reads.
  const early = isParsed(input)
    ? input
    : within === undefined
      ? await parseWithPolicy(store, input)
      : undefined;
  const delay = delayOf(options);
  const queue = options.queue ?? DEFAULT_QUEUE;
  if (!isQueueName(queue)) {
    throw new RangeError(`enqueue: queue must be ${QUEUE_NAME_RULE}, got ${JSON.stringify(queue)}`);
  }
  const prepare = (batch: ParsedBatch) => {
    const unit: RejectionUnit =
      batch.unit === 'event' ? { unit: 'event', events: batch.lines } : { unit: 'line' };
    return { batch, unit, keyed: assignKeys(batch, options) };
  };
  const prepared = early === undefined ? undefined : prepare(early);
  return store.transact(async (x) => {
    const now = store.clock();
    const policyText = await store.driver.readIdPolicy(x);
    remember(store, policyText);
    const { batch, unit, keyed } =
      prepared ?? prepare(parseInput(input as RawInput, policyOf(policyText)));
    checkIds(keyed.entries, policyText, unit);
    await refuseForgotten(store, x, keyed.entries, unit);
    const accepted = keyed.entries.some((entry) => entry.key !== undefined)
      ? await insertKeyed(store, x, keyed.entries, now, unit, delay, queue)
      : await insertNew(store, x, keyed.entries, now, unit, delay, queue);
    if (accepted > 0) await store.driver.wake(x);
    crashPoint('mid-enqueue');
    return {
      accepted,
      duplicates: batch.duplicates + (batch.entries.length - accepted),
    };
  }, within);
}

type RawInput = Uint8Array | string | readonly EventInput[];

/** The policy `onceq_meta` holds (`text`), `lesson` for a store without the row. */
function policyOf(text: string | undefined): IdPolicy {
  return text === undefined ? LESSON_POLICY : parseIdPolicy(text);
}

/**
 * The dedup window (docs/operations.md): a UUIDv7 made before the store's forgetting
 * horizon that the store does not hold is refused, since its tombstone may have been
 * forgotten. Costs nothing for a batch without UUIDv7 ids (nothing is read), one read of
 * `onceq_meta` otherwise, and a lookup only of ids made before the horizon. Other ids
 * carry no readable time: a repeat of a forgotten one is accepted as new.
 */
async function refuseForgotten(
  store: Store,
  x: Executor,
  entries: readonly BatchEntry[],
  unit: RejectionUnit,
): Promise<void> {
  if (!entries.some((entry) => uuidV7Millis(entry.eventId) !== undefined)) return;
  const horizon = await store.driver.readForgottenBefore(x);
  if (horizon <= 0) return;
  const old = madeBeforeWindow(entries, horizon);
  if (old.length === 0) return;
  const held = new Set((await readStored(store, x, old)).map((row) => row.event_id));
  const issues = old.filter((entry) => !held.has(entry.eventId));
  if (issues.length > 0) {
    throw new BatchRejectedError(
      issues.slice(0, MAX_BATCH_ISSUES).map((entry) => beforeWindow(entry, horizon)),
      { ...unit, problems: issues.length },
    );
  }
}

function parseInput(input: RawInput, policy: IdPolicy) {
  return Array.isArray(input)
    ? parseEvents(input, policy)
    : parseBatch(input as Uint8Array | string, policy);
}

/**
 * Inserts the lines whose event ids are not stored yet, returns how many, and throws a
 * {@link BatchRejectedError} on a conflict. One `insertMessages` call for the whole batch
 * (SQLite's driver cuts it into 500-row statements, PostgreSQL's sends one statement): it
 * skips stored ids (`ON CONFLICT DO NOTHING`) and counts what it added, so a batch of new
 * lines is never read back. Only when some lines were skipped are the stored rows of the
 * batch read, and a skipped line stored with another payload rejects the batch. On
 * PostgreSQL a line another writer is storing at the same moment waits for that writer:
 * skipped once it commits (and read back, by the read's fresh snapshot), inserted if it
 * rolls back.
 */
async function insertNew(
  store: Store,
  x: Executor,
  entries: readonly BatchEntry[],
  now: number,
  unit: RejectionUnit,
  delay: EnqueueDelay | undefined,
  queue: string,
): Promise<number> {
  if (entries.length === 0) return 0;
  const inserted = await storeRows(store, x, entries, now, delay, queue);
  if (inserted < entries.length) {
    rejectConflicts(entries, await readStored(store, x, entries), unit, queue);
  }
  return inserted;
}

/**
 * {@link insertNew} for a batch with ordering keys (docs/ordering.md). Under the keys'
 * locks (taken in sorted order, so two enqueues sharing keys never wait on each other
 * in a cycle), and only then reading: the stored rows of the batch's ids (a duplicate is
 * skipped, a conflict rejects the batch) and each key's last message. A new keyed
 * message takes the next position in its key and is `ready` if its key has no unfinished
 * message (it is the head), else `waiting`; a batch's messages of one key follow each
 * other in batch order.
 */
async function insertKeyed(
  store: Store,
  x: Executor,
  entries: readonly BatchEntry[],
  now: number,
  unit: RejectionUnit,
  delay: EnqueueDelay | undefined,
  queue: string,
): Promise<number> {
  const keys = [...new Set(entries.flatMap((entry) => entry.key ?? []))].sort();
  await store.driver.lockKeys(
    x,
    keys.map((key) => keyLockName(queue, key)),
  );
  const stored = await readStored(store, x, entries);
  rejectConflicts(entries, stored, unit, queue);
  const storedIds = new Set(stored.map((row) => row.event_id));
  const tails = new Map<string, { seq: number; finished: boolean }>();
  for (const tail of await store.driver.keyTails(x, keys, queue)) {
    // A last message whose row is gone is no longer anyone's head.
    tails.set(tail.ordering_key, { seq: tail.seq, finished: tail.finished ?? true });
  }
  const rows: NewMessage[] = [];
  for (const entry of entries) {
    if (storedIds.has(entry.eventId)) continue;
    if (entry.key === undefined) {
      rows.push({ eventId: entry.eventId, payload: entry.payload });
      continue;
    }
    const tail = tails.get(entry.key);
    const seq = (tail?.seq ?? 0) + 1;
    const state = tail === undefined || tail.finished ? 'ready' : 'waiting';
    tails.set(entry.key, { seq, finished: false });
    rows.push({
      eventId: entry.eventId,
      payload: entry.payload,
      ordering: { name: entry.key, seq, state },
    });
  }
  const inserted = await storeRows(store, x, rows, now, delay, queue);
  // A line stored by a concurrent enqueue since the read (PostgreSQL: the same id without
  // this key; the same key waits on its lock): a conflict, or a duplicate without a key.
  if (inserted < rows.length) {
    rejectConflicts(entries, await readStored(store, x, entries), unit, queue);
  }
  // Past the check every keyed row was new: a keyed line stored since the read is a
  // conflict (its key's lock is held here), and a conflict rejected the batch.
  await store.driver.insertKeyPositions(
    x,
    queue,
    rows.flatMap((row) =>
      row.ordering === undefined
        ? []
        : [{ ordering_key: row.ordering.name, seq: row.ordering.seq, event_id: row.eventId }],
    ),
  );
  return inserted;
}

/**
 * The batch's new rows, written in event-id order, whatever the order of its lines. A
 * claim takes ready messages by `(available_at, event_id)` and `available_at` is whole
 * seconds, so the messages a claim takes, and later ACKs, are neighbours in id order:
 * written in that order they are neighbours on disk too (SQLite's rowid pages,
 * PostgreSQL's heap), and a batch of claims or ACKs changes a few pages instead of one
 * page per message, as with random ids (UUIDv4) written in arrival order. Nothing else
 * depends on the order: an ordering key's positions are given before (`seq`, in line
 * order), and duplicates and conflicts are found by id.
 */
function storeRows(
  store: Store,
  x: Executor,
  rows: readonly NewMessage[],
  now: number,
  delay: EnqueueDelay | undefined,
  queue: string,
): Promise<number> {
  const inIdOrder = [...rows].sort((a, b) =>
    a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0,
  );
  return store.driver.insertMessages(x, inIdOrder, now, delay, queue);
}

/** The options' delay, checked; undefined when there is none. */
function delayOf(options: EnqueueOptions): EnqueueDelay | undefined {
  const { availableAt, delaySeconds } = options;
  if (availableAt === undefined && delaySeconds === undefined) return undefined;
  for (const [name, value] of [
    ['availableAt', availableAt],
    ['delaySeconds', delaySeconds],
  ] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw new RangeError(`enqueue: ${name} must be a whole number of seconds >= 0, got ${value}`);
    }
  }
  return { seconds: delaySeconds ?? 0, at: availableAt ?? 0 };
}

function readStored(
  store: Store,
  x: Executor,
  entries: readonly BatchEntry[],
): Promise<StoredForEnqueue[]> {
  return store.driver.lookupForEnqueue(
    x,
    entries.map((entry) => entry.eventId),
  );
}

function rejectConflicts(
  entries: readonly BatchEntry[],
  stored: readonly StoredForEnqueue[],
  unit: RejectionUnit,
  queue: string,
) {
  const conflicts = findConflicts(entries, stored, queue);
  if (conflicts.length > 0) throw new BatchRejectedError(conflicts, unit);
}

/**
 * The lines whose event id is stored with another payload, in line order. `stored` holds
 * the rows of the batch's ids after its INSERT: a row this batch just added carries the
 * line's own payload, so only a row stored before can differ.
 */
function findConflicts(
  entries: readonly BatchEntry[],
  stored: readonly StoredForEnqueue[],
  queue: string,
): BatchIssue[] {
  const byId = new Map<string, StoredForEnqueue>();
  for (const row of stored) byId.set(row.event_id, row);
  const conflicts: BatchIssue[] = [];
  for (const entry of entries) {
    const existing = byId.get(entry.eventId);
    if (existing === undefined) continue;
    if (existing.queue !== queue) {
      conflicts.push({
        line: entry.line,
        reason: `event_id ${entry.eventId} is already stored in queue ${JSON.stringify(existing.queue)} (an event id names one event in the whole store)`,
      });
    } else if ((existing.ordering_key ?? undefined) !== entry.key) {
      conflicts.push({
        line: entry.line,
        reason: `event_id ${entry.eventId} is already stored ${existing.ordering_key === null ? 'without an ordering key' : `with ordering key ${JSON.stringify(existing.ordering_key)}`} (an event id names one event in the whole store)`,
      });
    } else if (existing.payload === null) {
      // Pruned: only the tombstone's hash is left to compare with.
      if (existing.payload_sha256 !== payloadSha256(entry.payload)) {
        conflicts.push(prunedConflict(entry, existing.pruned_at));
      }
    } else if (existing.payload !== entry.payload) {
      conflicts.push({
        line: entry.line,
        reason: `event_id ${entry.eventId} is already stored with a different payload (a correction needs a new event id)`,
      });
    }
  }
  return conflicts;
}

/**
 * The id policy each store's last enqueue read inside its transaction. Parsing with it
 * saves a read of `onceq_meta` per batch; it is only a guess, since the transaction reads
 * the policy again and checks every id against it. A batch the guess refuses is parsed
 * again with the policy read now, so a rejection always names the store's current policy.
 */
const lastPolicy = new WeakMap<Store, { text: string; policy: IdPolicy }>();

function remember(store: Store, text: string | undefined): void {
  if (text === undefined || lastPolicy.get(store)?.text === text) return;
  try {
    lastPolicy.set(store, { text, policy: parseIdPolicy(text) });
  } catch {
    lastPolicy.delete(store); // unreadable: checkIds reports it; the next parse reads again
  }
}

async function parseWithPolicy(store: Store, input: RawInput): Promise<ParsedBatch> {
  const guess = lastPolicy.get(store);
  if (guess === undefined) return parseInput(input, await getIdPolicy(store));
  try {
    return parseInput(input, guess.policy);
  } catch (error) {
    if (!(error instanceof BatchRejectedError)) throw error;
    const current = await getIdPolicy(store);
    if (formatIdPolicy(current) === guess.text) throw error;
    return parseInput(input, current);
  }
}

function isParsed(input: EnqueueInput): input is ParsedBatch {
  return (
    typeof input === 'object' &&
    !(input instanceof Uint8Array) &&
    !Array.isArray(input) &&
    'entries' in input
  );
}
