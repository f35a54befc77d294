import type { Store } from '../driver/backend.ts';
import type { Claimer } from './claimer.ts';
import { mayClaimAhead } from './connections.ts';
import type { Held } from './held.ts';
import type { Recorder } from './recorder.ts';

/**
 * How the worker gets its batches and records them (River's completer). One is chosen
 * when the worker is made, from the backend's capabilities ({@link chooseCompleter}); the
 * loop is the same for both:
 *
 * ```
 * batch = await next()      // empty: nothing claimable now (or `max` reached)
 * handle(batch)
 * await record(batch)
 * … at the end: await finish()
 * ```
 */
export interface Completer {
  /** Which completer this is, for the worker's start line. */
  readonly kind: 'transaction' | 'pipelined';
  /**
   * The next batch to handle: one a record or a claim ahead brought, else claimed now.
   * Empty when nothing is claimable (a claim just found nothing) or nothing may be
   * claimed. Rejects when a record still in flight failed.
   */
  next(): Promise<Held[]>;
  /** Records the handled `batch` (taken in hand at `startedAt`), claiming the next with it. */
  record(batch: readonly Held[], startedAt: number): Promise<void>;
  /**
   * Ends the pipeline: waits for every record in flight (rejecting when one failed, after
   * all ended) and gives back what was claimed but never handled, attempts not spent.
   */
  finish(): Promise<void>;
}

/**
 * The completer for `store`'s backend: {@link PipelinedCompleter} where claims may run
 * beside writes (`capabilities.skipLocked`: PostgreSQL) and `claimAhead` is on, else
 * {@link TransactionCompleter} (SQLite, whose one write lock serializes everything).
 */
export function chooseCompleter(
  store: Store,
  claimAhead: boolean,
  claimer: Claimer,
  recorder: Recorder,
): Completer {
  return store.driver.capabilities.skipLocked && claimAhead
    ? new PipelinedCompleter(claimer, recorder, () => mayClaimAhead(store))
    : new TransactionCompleter(claimer, recorder);
}

/**
 * Records a batch and claims the next one in one write (SQLite: one transaction, one
 * commit a batch), and waits for it: the worker holds one batch at a time.
 */
export class TransactionCompleter implements Completer {
  readonly kind = 'transaction';
  readonly #claimer: Claimer;
  readonly #recorder: Recorder;
  /** What the last record claimed (empty: it found nothing), or null: claim now. */
  #next: Held[] | null = null;

  constructor(claimer: Claimer, recorder: Recorder) {
    this.#claimer = claimer;
    this.#recorder = recorder;
  }

  async next(): Promise<Held[]> {
    const next = this.#next;
    this.#next = null;
    if (next !== null) return next;
    await this.#recorder.giveBack();
    return this.#claimer.claim();
  }

  async record(batch: readonly Held[], startedAt: number): Promise<void> {
    this.#next = await this.#claimer.claimWith((next) =>
      this.#recorder.settle(batch, startedAt, next),
    );
  }

  async finish(): Promise<void> {
    const left = this.#next;
    this.#next = null;
    if (left !== null && left.length > 0) await this.#recorder.settle(left, performance.now());
    await this.#recorder.giveBack();
  }
}

/**
 * Records overlap with handling (PostgreSQL): a batch's record goes out and the loop
 * moves on to the next batch at once; the record also claims the batch after that one,
 * in its own statement. At the start, and whenever no record is bringing a batch, a
 * claim goes out ahead, while the batch in hand is handled. The worker so holds at most
 * three batches: one being recorded (and claiming), one being handled, one on its way.
 * Each record runs on a connection of its own; a slow one holds back neither the next
 * handler nor the next record, and its failure surfaces when its batch is due.
 */
export class PipelinedCompleter implements Completer {
  readonly kind = 'pipelined';
  readonly #claimer: Claimer;
  readonly #recorder: Recorder;
  /**
   * The batches on their way, oldest first: a claim ahead, or a record and the claim it
   * makes (null inside: it claimed nothing, there was no room).
   */
  readonly #coming: Promise<Held[] | null>[] = [];
  /**
   * Whether a record went out since the last batch was taken: a claim that came back
   * empty then proves nothing. The record's own claim runs in the record's statement, on
   * its snapshot, and a claim ahead ran before the record committed, so neither saw the
   * messages the record released (a keyed message's successor becomes ready when it is
   * done: docs/ordering.md).
   */
  #recorded = false;
  /** Whether a claim ahead would get a connection now (no leases it could not settle). */
  readonly #spare: () => boolean;

  constructor(claimer: Claimer, recorder: Recorder, spare: () => boolean) {
    this.#claimer = claimer;
    this.#recorder = recorder;
    this.#spare = spare;
  }

  async next(): Promise<Held[]> {
    let claimed = false;
    const recorded = this.#recorded;
    this.#recorded = false;
    for (let coming = this.#coming.shift(); coming !== undefined; coming = this.#coming.shift()) {
      const batch = await coming;
      if (batch === null) continue;
      if (batch.length > 0) return this.#ahead(batch);
      claimed = true;
    }
    // A claim that came back empty after every record committed says nothing is
    // claimable now: no claim of nothing. After a record, one claim of its own, now,
    // once what could not be recorded is given back.
    if (claimed && !recorded) return [];
    await this.#recorder.giveBack();
    return this.#ahead(await this.#claimer.claim());
  }

  record(batch: readonly Held[], startedAt: number): Promise<void> {
    this.#recorded = true;
    const recorded = this.#claimer.claimWith((next) =>
      this.#recorder.settle(batch, startedAt, next),
    );
    this.#coming.push(quiet(recorded));
    return Promise.resolve();
  }

  async finish(): Promise<void> {
    const coming = this.#coming.splice(0);
    const ended = await Promise.allSettled(coming);
    const failed = ended.find((e) => e.status === 'rejected');
    const left = ended.flatMap((e) => (e.status === 'fulfilled' ? (e.value ?? []) : []));
    if (left.length > 0) await this.#recorder.settle(left, performance.now());
    await this.#recorder.giveBack();
    if (failed !== undefined) throw failed.reason;
  }

  /** `batch` is taken in hand: with no batch on its way, one more is claimed ahead now. */
  #ahead(batch: Held[]): Held[] {
    if (
      batch.length > 0 &&
      this.#coming.length === 0 &&
      this.#claimer.room() > 0 &&
      this.#spare()
    ) {
      this.#coming.push(quiet(this.#claimer.claim()));
    }
    return batch;
  }
}

/**
 * Marks a promise as handled now, so its rejection (awaited later, after other work) is
 * not reported as unhandled in between; awaiting the returned promise still throws.
 */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}
