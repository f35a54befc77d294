import type { FailureMove } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { CompletionWrite } from './driver.ts';
import type { Executor } from './prepared.ts';

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
}

/**
 * The user completions of one transaction (`x`), each message with its own outcome:
 * `null` for done, the move for a recorded failure, nothing for a lost lease. A
 * message's `write(tx)` runs only after its fenced ACK matched, on the same connection;
 * a write that throws leaves nothing of its message and fails it, the others kept.
 *
 * The common case costs one savepoint for the whole batch, not one per message (two
 * round trips each on PostgreSQL): every ACK and record at once, then every write in
 * order. Only when something in it throws is the batch rolled back to that savepoint and
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
        for (const write of writes) {
          if (!acked.has(write.lease.eventId)) continue;
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
  const { tx, close } = x.completionTx();
  try {
    await write.completion.write(tx);
  } finally {
    close();
  }
  crashPoint('after-completion-write');
}

/**
 * One user completion in a savepoint of its own: the fenced ACK first (a lost lease
 * writes nothing, and the user's write never runs), then `write(tx)`, then onceq's
 * record. When any of it throws, the savepoint is rolled back (the user's rows and the
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
      await userWrite(x, write);
      await steps.record(write);
      return null;
    });
  } catch (error) {
    const move = write.failed(error, now);
    return (await steps.fail(write, move)) === 1 ? move : undefined;
  }
}
