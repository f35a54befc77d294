import type { FailureMove } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { CompletionWrite } from './driver.ts';
import type { Executor } from './prepared.ts';

type UserWrite = Extract<CompletionWrite, { completion: unknown }>;

/** How a backend writes the parts of one completion around the user's own write. */
export interface CompletionSteps {
  /** The fenced ACK of the message alone; the rows it changed (0 = the lease is lost). */
  ack(): Promise<number>;
  /** onceq's record of the done message (its `completions` row). */
  record(): Promise<void>;
  /** The fenced failure move; the rows it changed. */
  fail(move: FailureMove): Promise<number>;
}

/**
 * One user completion inside the open transaction of `x`, in a savepoint of its own:
 * the fenced ACK first (a lost lease writes nothing, and the user's write never runs),
 * then `write(tx)` on the same connection, then onceq's record. When any of it throws,
 * the savepoint is rolled back (the user's rows and the ACK with it, the other messages
 * of the transaction kept) and the message's failure is written instead. Returns `null`
 * for done, the move for a recorded failure, `undefined` when the lease was lost.
 */
export async function writeCompletion(
  x: Executor,
  write: UserWrite,
  now: number,
  steps: CompletionSteps,
): Promise<FailureMove | null | undefined> {
  try {
    return await x.savepoint(async () => {
      if ((await steps.ack()) === 0) return undefined;
      const { tx, close } = x.completionTx();
      try {
        await write.completion.write(tx);
      } finally {
        close();
      }
      crashPoint('after-completion-write');
      await steps.record();
      return null;
    });
  } catch (error) {
    const move = write.failed(error, now);
    return (await steps.fail(move)) === 1 ? move : undefined;
  }
}
