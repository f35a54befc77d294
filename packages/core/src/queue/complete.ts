/**
 * THE result writer: every handler result of a claim (success or failure, one message or
 * a batch, from the worker loop, `apply` or the CLI's `fail`) is recorded here, by one
 * driver method per backend (`Driver.complete`).
 */
import type { Store } from '../driver/backend.ts';
import type { CompleteOptions, CompleteReport, CompletionWrite } from '../driver/driver.ts';
import { completionFailureOf, writeRefusal } from '../driver/write-refusal.ts';
import { LeaseLostError, OnceqError } from '../errors.ts';
import type { Handler } from '../handler/contract.ts';
import { type HandlerResult, handlerStore, runHandler, withDeadline } from '../handler/run.ts';
import { afterFailure, type FailureMove, fenceViolation } from '../machine.ts';
import { crashPoint } from '../testing/crash-points.ts';
import type { ApplyOutcome, Lease, LeaseRef } from '../types.ts';
import { toLeases } from './claim.ts';
import { explainLost } from './extend.ts';

/** A lease as its claim returned it: the fencing token and the attempt it counted. */
export type ClaimedLease = Pick<Lease, 'eventId' | 'generation' | 'attempt'>;

/** One handler result, with the lease it was computed under. */
export interface ClaimResult {
  readonly lease: ClaimedLease;
  readonly result: HandlerResult;
}

/** What {@link complete} recorded. */
export type { CompleteOptions };

export interface CompleteResult {
  /** One per message whose result was recorded, in the order given. */
  outcomes: ApplyOutcome[];
  /** Leases found lost (another claim, a release, a redrive or the clock got there first): nothing of them was written. */
  lost: LeaseLostError[];
  /**
   * The leases claimed by the write itself ({@link CompleteOptions.claimNext}), in claim
   * order; defined whenever `claimNext` was given (unless the write threw).
   */
  claimed?: Lease[];
}

/** A signal that never fires, for handlers run where nothing can abort them. */
const NEVER = new AbortController().signal;

/**
 * Records the handler results of claimed messages: for each, the completion's rows (the
 * money effect's `effects` row, or a handler's own rows and `write(tx)`) **with its
 * ACK, in one transaction**, or the failure (permanent →
 * `dead`; temporary → `ready` after backoff, or `dead` on the last attempt).
 *
 * Every write is fenced in its SQL `WHERE`: state `leased`, the lease's generation,
 * `lease_until > now` with `now` read at the write, after the handler. Zero rows means
 * the lease is lost: nothing of that message is written (no effect, no completion, none
 * of the user's rows, since a completion's `insert` rows and `write(tx)` go in only after its fenced ACK
 * matched), and the caller gets a {@link LeaseLostError} whose reason is read after the
 * fact (the rare path). The other messages of a batch are recorded regardless.
 *
 * **Why this is exactly-once although the handler ran outside any transaction.** The
 * handler ran on the payload read under this generation (by the claim, or by
 * {@link apply}'s fenced read), and a stored payload never changes (a conflicting
 * enqueue is refused, redrive keeps it). The write commits only while the message is
 * still `leased` at that generation with time left; every other claim bumps the
 * generation, and a release, a recovery or a redrive leaves the row not `leased`. So at
 * most one result per message commits, it commits together with its ACK (the effect or
 * the user's rows included), and it was computed from the stored payload. The `attempt`
 * a failure's backoff is computed from is the one the claim counted, which nothing can
 * change without the fence noticing. What is not exactly-once: anything the handler did
 * outside the store (an HTTP call) runs once per attempt; key it on the event id.
 *
 * Results are copies the runner checked once (handler/run.ts), so one handler cannot
 * make a batch's write fail with a value it changes after the check. If the database
 * refuses a batch's write anyway (a trigger, a constraint of the user's), the batch is
 * recorded again one message at a time, so each gets its own outcome; a message whose
 * own write is refused fails with code `write_failed` and the database's reason
 * (permanent for a missing table or column, see driver/write-refusal.ts). A store that cannot be written at all (disk full, unreachable) throws.
 *
 * Crash points: `after-handler` before the write, `after-effect-insert`,
 * `after-completion-write` and `after-ack` in it (before COMMIT, except PostgreSQL's one
 * statement for a batch without `write(tx)`, which has committed by then),
 * `after-commit` after it, `after-claim` once a `claimNext` claim is in hand.
 */
export async function complete(
  store: Store,
  results: readonly ClaimResult[],
  options: CompleteOptions = {},
): Promise<CompleteResult> {
  crashPoint('after-handler');
  if (results.length === 0) return { outcomes: [], lost: [] };
  let report: CompleteReport;
  try {
    const writes = results.map((r) => writeOf(store, r));
    report = await store.driver.complete(store, writes, options);
  } catch (error) {
    if (unwritable(error)) throw error;
    const [only] = results;
    if (results.length === 1 && only !== undefined) return refused(store, only, error, options);
    return oneByOne(store, results, options);
  }
  crashPoint('after-commit');
  const done = await reported(store, results, report);
  if (report.claimed === undefined) return done;
  crashPoint('after-claim');
  return { ...done, claimed: toLeases(report.claimed) };
}

/**
 * Runs `handler` on the stored payload of a held lease and records the result
 * (`onceq complete <id> --generation G`): a short fenced read of the payload (never the
 * caller's copy), the handler outside any transaction, then {@link complete} at the same
 * generation, in one explicit write transaction (§5: the effect rows are in before
 * COMMIT, and a crash there leaves nothing). Throws {@link LeaseLostError} when the lease does not hold at either end.
 */
export async function apply(
  store: Store,
  lease: LeaseRef,
  handler: Handler,
  signal: AbortSignal = NEVER,
  timeoutMs?: number,
): Promise<ApplyOutcome> {
  const row = await store.transact(async (x) => {
    const [found] = await store.driver.readFenced(x, [lease]);
    const why = fenceViolation(found, lease, store.clock());
    if (why !== null) throw new LeaseLostError(lease.eventId, lease.generation, why);
    return found as NonNullable<typeof found>;
  });
  const claimed = {
    eventId: lease.eventId,
    generation: lease.generation,
    attempt: Number(row.attempts),
  };
  // The handler's signal fires when the caller's does or when its deadline passes.
  const deadline = new AbortController();
  const handlerSignal = AbortSignal.any([signal, deadline.signal]);
  const result = await withDeadline(
    runHandler(handler, row.payload, {
      ...claimed,
      signal: handlerSignal,
      store: handlerStore(store),
    }),
    timeoutMs,
    (reason) => deadline.abort(reason),
  );
  const { outcomes, lost } = await complete(store, [{ lease: claimed, result }], {
    explicitTransaction: true,
  });
  if (lost[0] !== undefined) throw lost[0];
  return outcomes[0] as ApplyOutcome;
}

function writeOf(store: Store, { lease, result }: ClaimResult): CompletionWrite {
  const { protocol } = store;
  if ('completion' in result) {
    return {
      lease,
      completion: result.completion,
      failed: (error, now) =>
        afterFailure(protocol, lease.attempt, completionFailureOf(error), now),
    };
  }
  return { lease, failure: (now) => afterFailure(protocol, lease.attempt, result.failure, now) };
}

function reported(
  store: Store,
  results: readonly ClaimResult[],
  report: CompleteReport,
): CompleteResult | Promise<CompleteResult> {
  const outcomes: ApplyOutcome[] = [];
  const missed: LeaseRef[] = [];
  for (const { lease, result } of results) {
    const move = report.written.get(lease.eventId);
    if (move === undefined) missed.push(lease);
    else if (move !== null) outcomes.push(failed(lease.eventId, move));
    else if ('completion' in result) {
      const { effect, summary } = result.completion;
      outcomes.push(
        effect === null
          ? { eventId: lease.eventId, outcome: 'done', effect: null, summary }
          : { eventId: lease.eventId, outcome: 'done', effect },
      );
    }
  }
  if (missed.length === 0) return { outcomes, lost: [] };
  return store
    .transact((x) => explainLost(store, x, missed, report.now))
    .then((lost) => ({ outcomes, lost }));
}

function failed(eventId: string, move: FailureMove): ApplyOutcome {
  const { code, detail } = move;
  return move.state === 'dead'
    ? { eventId, outcome: 'dead', code, detail }
    : { eventId, outcome: 'retry', code, detail, availableAt: move.availableAt };
}

/**
 * A batch the database refused as a whole, recorded one message at a time; the last one
 * carries the claim of {@link CompleteOptions.claimNext}, if asked.
 */
async function oneByOne(
  store: Store,
  results: readonly ClaimResult[],
  options: CompleteOptions,
): Promise<CompleteResult> {
  const outcomes: ApplyOutcome[] = [];
  const lost: LeaseLostError[] = [];
  const { claimNext, ...alone } = options;
  let claimed: Lease[] | undefined;
  for (const [i, result] of results.entries()) {
    const last = i === results.length - 1;
    const one = await complete(store, [result], last ? options : alone);
    outcomes.push(...one.outcomes);
    lost.push(...one.lost);
    if (last) claimed = one.claimed;
  }
  return claimed === undefined ? { outcomes, lost } : { outcomes, lost, claimed };
}

/**
 * One message whose write the database refused: its failure instead (`write_failed`,
 * the database's reason as detail, permanent for a missing table or column). When even that is refused, the
 * original error is thrown: the lease then runs out and lazy recovery retries it.
 */
async function refused(
  store: Store,
  only: ClaimResult,
  error: unknown,
  options: CompleteOptions,
): Promise<CompleteResult> {
  const failure = writeRefusal(error, 'rows');
  const instead: ClaimResult = { lease: only.lease, result: { failure } };
  let report: CompleteReport;
  try {
    report = await store.driver.complete(store, [writeOf(store, instead)], options);
  } catch {
    throw error;
  }
  crashPoint('after-commit');
  const done = await reported(store, [instead], report);
  if (report.claimed === undefined) return done;
  crashPoint('after-claim');
  return { ...done, claimed: toLeases(report.claimed) };
}

/** The store itself cannot take writes now (full disk, read-only, busy, unreachable). */
function unwritable(error: unknown): boolean {
  return error instanceof OnceqError && error.exitCode === 1;
}
