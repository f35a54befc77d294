import { PermanentFailure, TemporaryFailure } from '../errors.ts';
import type { RowGroup } from '../handler/completion-rows.ts';
import type { FailureMove } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { CompletionWrite } from './driver.ts';
import type { Executor } from './executor.ts';
import { writeRefusal } from './write-refusal.ts';

export type UserWrite = Extract<CompletionWrite, { completion: unknown }>;

/** How a backend writes the parts of user completions around the users' own writes. */
export interface CompletionSteps {
  /**
   * The fenced ACKs of every message of `writes` and onceq's record (its `completions`
   * row) of each one ACKed, as few statements as the backend can; the ids it ACKed.
   */
  ackAll(writes: readonly UserWrite[]): Promise<ReadonlySet<string>>;
  /** The fenced ACK of one message alone; the rows it changed (0 = the lease is lost). */
  ack(write: UserWrite): Promise<number>;
  /** onceq's record of one done message (its `completions` row). */
  record(write: UserWrite): Promise<void>;
  /** The fenced failure move of one message; the rows it changed. */
  fail(write: UserWrite, move: FailureMove): Promise<number>;
  /**
   * The `insert` rows of `groups` (of one message or of a batch, every one ACKed): one
   * statement per table and column list at least, in the order the tables first appear.
   */
  insert(groups: readonly RowGroup[]): Promise<void>;
}

/**
 * The user completions of one transaction (`x`), each message with its own outcome:
 * `null` for done, the move for a recorded failure, nothing for a lost lease. A
 * message's `write(tx)` runs only after its fenced ACK matched, on the same connection;
 * a write that throws leaves nothing of its message and fails it, the others kept.
 *
 * The common case costs one savepoint for the whole batch, not one per message (two
 * round trips each on PostgreSQL): every ACK and record at once, then the `insert` rows
 * of every message ACKed (one INSERT per table and column list at least: `steps.insert`),
 * then every write in order. (A PostgreSQL worker's batch of `insert` rows alone does
 * not come here: driver/postgres/completion-rows.ts writes it as one statement.) Only when something in it
 * throws (a row the database refuses included) is the batch rolled back to that savepoint and
 * written again one message at a time, each in a savepoint of its own, so the one that
 * throws fails alone. A `write` before the one that threw then runs twice: its first
 * rows were rolled back, and only what the final pass wrote commits.
 */
export async function writeCompletions(
  x: Executor,
  writes: readonly UserWrite[],
  now: number,
  steps: CompletionSteps,
): Promise<Map<string, FailureMove | null>> {
  if (writes.length > 1) {
    try {
      return await x.savepoint(async () => {
        const written = new Map<string, FailureMove | null>();
        const acked = await steps.ackAll(writes);
        const done = writes.filter((write) => acked.has(write.lease.eventId));
        await insertRows(
          done.flatMap((write) => write.completion.rows),
          steps,
        );
        for (const write of done) {
          await userWrite(x, write);
          written.set(write.lease.eventId, null);
        }
        return written;
      });
    } catch {
      // Rolled back to before the batch: each message on its own finds out which threw.
    }
  }
  const written = new Map<string, FailureMove | null>();
  for (const write of writes) {
    const result = await writeCompletion(x, write, now, steps);
    if (result !== undefined) written.set(write.lease.eventId, result);
  }
  return written;
}

/** The user's `write(tx)` on the open transaction, its `tx` closed once it returned. */
async function userWrite(x: Executor, write: UserWrite): Promise<void> {
  const run = write.completion.write;
  if (run === null) return;
  const { tx, close } = x.completionTx();
  try {
    await run(tx);
  } finally {
    close();
  }
  crashPoint('after-completion-write');
}

/** The `insert` rows of `groups`, then the crash point after the user's rows. */
async function insertRows(groups: readonly RowGroup[], steps: CompletionSteps): Promise<void> {
  if (groups.length === 0) return;
  await steps.insert(groups);
  crashPoint('after-completion-write');
}

/**
 * The `insert` rows of `groups` as multi-row `INSERT … VALUES` with bound parameters: one
 * per table and column list, each carrying as many rows as `maxParameters` allows, in the
 * order the tables first appear.
 */
export async function insertValues(
  x: Executor,
  groups: readonly RowGroup[],
  placeholder: (position: number) => string,
  maxParameters: number,
): Promise<void> {
  const merged = new Map<string, { group: RowGroup; rows: (readonly unknown[])[] }>();
  for (const group of groups) {
    const found = merged.get(group.key);
    if (found === undefined) merged.set(group.key, { group, rows: [...group.rows] });
    else found.rows.push(...group.rows);
  }
  for (const { group, rows } of merged.values()) {
    const width = group.columns.length;
    const perStatement = Math.max(1, Math.floor(maxParameters / width));
    for (let start = 0; start < rows.length; start += perStatement) {
      const chunk = rows.slice(start, start + perStatement);
      const tuples = chunk.map(
        (_, r) => `(${group.columns.map((_, c) => placeholder(r * width + c + 1)).join(', ')})`,
      );
      await x.query(
        `INSERT INTO ${group.table} (${group.columns.join(', ')}) VALUES ${tuples.join(', ')}`,
        chunk.flat(),
      );
    }
  }
}

/**
 * One message's `insert` rows; a row the database refuses is a `write_failed`, permanent
 * when it names a missing table or column ({@link writeRefusal}).
 */
async function insertOwnRows(write: UserWrite, steps: CompletionSteps) {
  try {
    await insertRows(write.completion.rows, steps);
  } catch (error) {
    const { kind, code, detail } = writeRefusal(error, 'insert rows');
    throw kind === 'permanent'
      ? new PermanentFailure(code, detail)
      : new TemporaryFailure(code, detail);
  }
}

/**
 * One user completion in a savepoint of its own: the fenced ACK first (a lost lease
 * writes nothing, and the user's rows and write never run), then its `insert` rows, then
 * `write(tx)`, then onceq's record. When any of it throws, the savepoint is rolled back (the user's rows and the
 * ACK with it, the other messages of the transaction kept) and the message's failure is
 * written instead. Returns `null` for done, the move for a recorded failure, `undefined`
 * when the lease was lost.
 */
async function writeCompletion(
  x: Executor,
  write: UserWrite,
  now: number,
  steps: CompletionSteps,
): Promise<FailureMove | null | undefined> {
  try {
    return await x.savepoint(async () => {
      if ((await steps.ack(write)) === 0) return undefined;
      await insertOwnRows(write, steps);
      await userWrite(x, write);
      await steps.record(write);
      return null;
    });
  } catch (error) {
    const move = write.failed(error, now);
    return (await steps.fail(write, move)) === 1 ? move : undefined;
  }
}
