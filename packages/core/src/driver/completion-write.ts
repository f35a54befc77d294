/**
 * How a backend's one result template is run (River's `JobSetStateIfRunningMany`): the
 * template takes a batch of results (each an event id, its generation and its outcome)
 * and writes, as one statement where the backend can, the fenced ACKs, the fenced
 * failure moves, the status counters, each table's rows joined to the ACKs that matched,
 * and an optional trailing claim. Everything here is the same for every backend; the
 * template itself is the backend's (`sqlite/sql/complete.ts`, `postgres/sql/complete.ts`).
 *
 * A batch without `write(tx)` is the template once. A user's `write(tx)` needs the open
 * transaction: the template once for the batch, then each write in order, all in one
 * savepoint; only when something in it throws is the batch rolled back to that savepoint
 * and written again one message at a time, each in a savepoint of its own, so the one
 * that throws fails alone (a `write` before it then runs twice: its first rows were
 * rolled back, and only what the final pass wrote commits).
 */
import { PermanentFailure, TemporaryFailure } from '../errors.ts';
import type { CheckedCompletion } from '../handler/run.ts';
import type { FailureMove } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { LeaseRef } from '../types.ts';
import type { ClaimedRow, ClaimInput, CompletionWrite } from './driver.ts';
import type { Executor } from './executor.ts';
import { writeRefusal } from './write-refusal.ts';

/** One result as the template writes it: a completion to ACK, or a failure's move. */
export type TemplateWrite =
  | { readonly lease: LeaseRef; readonly completion: CheckedCompletion }
  | { readonly lease: LeaseRef; readonly move: FailureMove };

/** What a template wrote: by event id, `null` for done, the move for a failure. */
export interface TemplateReport {
  readonly written: Map<string, FailureMove | null>;
  /** The trailing claim's rows, in claim order, when one was asked. */
  readonly claimed?: ClaimedRow[];
}

/**
 * A backend's result template on `x`: every write fenced in its SQL `WHERE` (state
 * `leased`, the generation, `lease_until > now`), the rows of a completion only if its
 * ACK matched, the counters, then the claim of `claim` when given. A message whose fence
 * does not match is missing from `written`. Throws when the database refuses any of it;
 * the caller's transaction (or the one statement) then holds nothing of it.
 */
export type ResultTemplate = (
  x: Executor,
  writes: readonly TemplateWrite[],
  now: number,
  claim: ClaimInput | undefined,
) => Promise<TemplateReport>;

/** Whether any write of `writes` needs the open transaction (a user's `write(tx)`). */
export function needsTransaction(writes: readonly CompletionWrite[]): boolean {
  for (const write of writes)
    if ('completion' in write && write.completion.write !== null) return true;
  return false;
}

/**
 * Records `writes` on `x` with `template` at `now`, then claims `claim` (when given) in
 * the same transaction or statement. Crash points: `after-effect-insert` and
 * `after-completion-write` once the template's rows are in (for a money effect, for a
 * handler's own completion), `after-completion-write` after each `write(tx)`, `after-ack`
 * once everything is written.
 */
export async function recordResults(
  x: Executor,
  writes: readonly CompletionWrite[],
  now: number,
  claim: ClaimInput | undefined,
  template: ResultTemplate,
): Promise<TemplateReport> {
  const settled = writes.map((write) => settle(write, now));
  if (!needsTransaction(writes)) {
    const report = await template(x, settled, now, claim);
    afterRows(settled, report.written);
    crashPoint('after-ack');
    return report;
  }
  const written = await withUserWrites(x, writes, settled, now, template);
  if (claim === undefined) {
    crashPoint('after-ack');
    return { written };
  }
  // The trailing claim: the template with no result of its own.
  const { claimed } = await template(x, [], now, claim);
  crashPoint('after-ack');
  return { written, claimed: claimed ?? [] };
}

function settle(write: CompletionWrite, now: number): TemplateWrite {
  return 'completion' in write ? write : { lease: write.lease, move: write.failure(now) };
}

/** The crash points of the rows the template wrote for the completions it ACKed. */
function afterRows(settled: readonly TemplateWrite[], written: Map<string, FailureMove | null>) {
  let effect = false;
  let own = false;
  for (const write of settled) {
    if (!('completion' in write) || written.get(write.lease.eventId) !== null) continue;
    if (write.completion.effect === null) own = true;
    else effect = true;
  }
  if (effect) crashPoint('after-effect-insert');
  if (own) crashPoint('after-completion-write');
}

/** The batch with its users' writes: one savepoint, or one per message after a throw. */
async function withUserWrites(
  x: Executor,
  writes: readonly CompletionWrite[],
  settled: readonly TemplateWrite[],
  now: number,
  template: ResultTemplate,
): Promise<Map<string, FailureMove | null>> {
  if (writes.length > 1) {
    try {
      return await x.savepoint(async () => {
        const { written } = await template(x, settled, now, undefined);
        afterRows(settled, written);
        for (const write of writes) {
          if ('completion' in write && written.get(write.lease.eventId) === null) {
            await userWrite(x, write.completion);
          }
        }
        return written;
      });
    } catch {
      // Rolled back to before the batch: each message on its own finds out which threw.
    }
  }
  const written = new Map<string, FailureMove | null>();
  for (let i = 0; i < writes.length; i++) {
    const write = writes[i] as CompletionWrite;
    const result = await writeOne(x, write, settled[i] as TemplateWrite, now, template);
    if (result !== undefined) written.set(write.lease.eventId, result);
  }
  return written;
}

/**
 * One message in a savepoint of its own: the template (its fenced ACK and rows; a lost
 * lease writes nothing and its `write` never runs), then its `write(tx)`. When any of it
 * throws, the savepoint is rolled back and the message's failure is written instead (a
 * row the database refused: a temporary `write_failed`). Returns `null` for done, the
 * move for a recorded failure, `undefined` when the lease was lost.
 */
async function writeOne(
  x: Executor,
  write: CompletionWrite,
  settled: TemplateWrite,
  now: number,
  template: ResultTemplate,
): Promise<FailureMove | null | undefined> {
  const id = write.lease.eventId;
  if (!('completion' in write))
    return (await template(x, [settled], now, undefined)).written.get(id);
  try {
    return await x.savepoint(async () => {
      const result = (await rowsOf(x, settled, now, template)).get(id);
      if (result !== null) return result;
      afterRows([settled], new Map([[id, null]]));
      await userWrite(x, write.completion);
      return null;
    });
  } catch (error) {
    const move = write.failed(error, now);
    return (await template(x, [{ lease: write.lease, move }], now, undefined)).written.get(id);
  }
}

/**
 * The template for one completion; rows the database refuses are a `write_failed`,
 * permanent when they name a missing table or column ({@link writeRefusal}).
 */
async function rowsOf(x: Executor, settled: TemplateWrite, now: number, template: ResultTemplate) {
  try {
    return (await template(x, [settled], now, undefined)).written;
  } catch (error) {
    const { kind, code, detail } = writeRefusal(error, 'rows');
    throw kind === 'permanent'
      ? new PermanentFailure(code, detail)
      : new TemporaryFailure(code, detail);
  }
}

/** The user's `write(tx)` on the open transaction, its `tx` closed once it returned. */
async function userWrite(x: Executor, completion: CheckedCompletion): Promise<void> {
  const run = completion.write;
  if (run === null) return;
  const { tx, close } = x.completionTx();
  try {
    await run(tx);
  } finally {
    close();
  }
  crashPoint('after-completion-write');
}
