import type { Store } from '../driver/backend.ts';
import type { Executor } from '../driver/executor.ts';
import { type DeadSelection, isQueueSelection } from '../driver/sql/dead-selection.ts';
import { NotDeadError, NotFoundError, PrunedError } from '../errors.ts';
import type { Handler } from '../handler/contract.ts';
import { handlerStore, runHandler, withDeadline } from '../handler/run.ts';
import { keyLockName } from '../queues.ts';
import { crashPoint } from '../testing/crash-points.ts';

/**
 * Which dead messages to redrive: a list of event ids, every dead message (`'all'`), or
 * every dead message of one queue (`{ queue }`).
 */
export type RedriveSelection = DeadSelection;

/**
 * Returns `dead` messages to `ready` for a new cycle (docs/protocol.md §5): attempts reset to 0,
 * available now; generation and payload kept, so a worker of the previous cycle can
 * never ACK. Only dead messages: if any named id is unknown or not dead, nothing
 * changes and {@link NotFoundError} / {@link NotDeadError} is thrown.
 */
export async function redrive(store: Store, selection: RedriveSelection): Promise<string[]> {
  return store.transact(async (x) => {
    const now = store.clock();
    if (isIdList(selection)) await assertAllDead(store, x, selection);
    const rejoined = await rejoinKeys(store, x, selection, now);
    const moved = [...rejoined, ...(await store.driver.redrive(x, selection, now))].sort();
    if (moved.length > 0) await store.driver.wake(x);
    crashPoint('mid-redrive');
    return moved;
  });
}

/**
 * A dead message that let its key go on without it (`on_dead: skip`) no longer heads its
 * key: its redrive puts it back at the key's end (docs/ordering.md), `waiting` behind the
 * key's unfinished messages, or its only head when there are none. Never a second head.
 * Returns the ids left waiting (redriven, but not ready yet).
 */
async function rejoinKeys(
  store: Store,
  x: Executor,
  selection: RedriveSelection,
  now: number,
): Promise<string[]> {
  const released = await store.driver.releasedDead(x, selection);
  if (released.length === 0) return [];
  const locks = released.map((r) => keyLockName(r.queue, r.ordering_key));
  await store.driver.lockKeys(x, [...new Set(locks)].sort());
  const waiting: string[] = [];
  for (const row of released) {
    if ((await store.driver.rejoinKey(x, row.event_id, now)) === 'waiting') {
      waiting.push(row.event_id);
    }
  }
  return waiting;
}

/**
 * Refuses unless every id names a dead message. The rows it checks stay locked until
 * COMMIT (PostgreSQL: `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` already holds the one
 * write lock): a concurrent redrive of the same ids waits here, then sees them `ready`
 * and refuses with {@link NotDeadError}, instead of finding nothing to move.
 */
async function assertAllDead(store: Store, x: Executor, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const rows = await store.driver.readForRedrive(x, ids);
  refuseUnlessAllDead(ids, rows);
  // A pruned dead message has no payload left to process (streams/prune.ts).
  const pruned = rows.find((r) => r.pruned_at !== null);
  if (pruned !== undefined) throw new PrunedError(pruned.event_id, 'redrive');
}

/**
 * Throws {@link NotFoundError} for the first unknown id, else {@link NotDeadError} for
 * any live one: what `operation` (a redrive or a skip) refuses before it changes anything.
 */
export function refuseUnlessAllDead(
  ids: readonly string[],
  rows: readonly { event_id: string; state: string }[],
  operation: 'redrive' | 'skip' = 'redrive',
): void {
  const found = new Set(rows.map((r) => r.event_id));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw new NotFoundError(missing);
  const alive = rows
    .filter((r) => r.state !== 'dead')
    .map((r) => ({ eventId: r.event_id, state: r.state }));
  if (alive.length > 0) throw new NotDeadError(alive, operation);
}

export interface RedrivePreview {
  eventId: string;
  /** Whether `handler` would now accept the stored payload. */
  accepted: boolean;
  code: string | null;
  detail: string | null;
}

/**
 * What a redrive would do with `handler`, changing nothing (`redrive --dry-run`): for
 * each selected dead message, whether the handler now accepts its stored payload, judged
 * by the same rules the worker uses (the one runner, `runHandler`: a payload that is not
 * an object, an effect the table would refuse, a thrown error that is not a branded
 * failure). A completion is accepted without running its `write`: nothing is written.
 */
export async function previewRedrive(
  store: Store,
  selection: RedriveSelection,
  handler: Handler,
  /** A deadline for each handler call, ms (`--handler-timeout`); none when undefined. */
  timeoutMs?: number,
): Promise<RedrivePreview[]> {
  if (isIdList(selection) && selection.length === 0) return [];
  const rows = await store.read((x) => store.driver.readForPreview(x, selection));
  if (isIdList(selection)) refuseUnlessAllDead(selection, rows);
  // The handler runs outside any transaction (none is open here): nothing is written.
  const previews: RedrivePreview[] = [];
  for (const row of rows) {
    if (row.payload === null) {
      const detail = 'the payload was pruned; only its hash is kept';
      previews.push({ eventId: row.event_id, accepted: false, code: 'pruned', detail });
      continue;
    }
    const deadline = new AbortController();
    const result = await withDeadline(
      runHandler(handler, row.payload, {
        eventId: row.event_id,
        attempt: 1,
        generation: Number(row.generation) + 1,
        signal: deadline.signal,
        store: handlerStore(store),
      }),
      timeoutMs,
      (reason) => deadline.abort(reason),
    );
    previews.push(
      'failure' in result
        ? {
            eventId: row.event_id,
            accepted: false,
            code: result.failure.code,
            detail: result.failure.detail ?? null,
          }
        : { eventId: row.event_id, accepted: true, code: null, detail: null },
    );
  }
  return previews;
}

function isIdList(selection: RedriveSelection): selection is readonly string[] {
  return selection !== 'all' && !isQueueSelection(selection);
}
