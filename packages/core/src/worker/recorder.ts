import type { Store } from '../driver/backend.ts';
import { StoreUnavailableError } from '../errors.ts';
import { type ClaimResult, type CompleteResult, complete } from '../queue/complete.ts';
import { releaseMany } from '../queue/release.ts';
import type { Lease } from '../types.ts';
import type { Claimer, ClaimNext } from './claimer.ts';
import type { Held } from './held.ts';
import type { Tally } from './tally.ts';

/**
 * Closes a batch: abandons the handlers still running after a forced stop, releases the
 * unstarted messages (attempts given back), and records every result through the one
 * result writer ({@link complete}), each fenced at the generation it ran under; `next`
 * asks that write to claim the next batch in its own commit. Both completers close their
 * batches here.
 *
 * A write that cannot reach the store (no connection to be had, or the one held was
 * lost) must not leave its leases to run out: a message whose worker lives never goes
 * dead of `lease_expired` for want of a connection. Its messages stay held (the heartbeat
 * keeps their leases alive when it can) and are **given back** ({@link giveBack}:
 * released, ready now, attempt not spent) as soon as a connection serves, urgently,
 * ahead of any new claim.
 */
export class Recorder {
  readonly #store: Store;
  /** The store under each queue's policy, by queue name: a result is recorded by its queue's. */
  readonly #policies: ReadonlyMap<string, Store>;
  readonly #claimer: Claimer;
  readonly #tally: Tally;
  /** The heartbeat's beat running now, if one is. */
  readonly #beat: () => Promise<void> | undefined;
  /** Messages a write could not settle for want of the store, to give back. */
  readonly #returning: Held[] = [];

  constructor(
    store: Store,
    policies: ReadonlyMap<string, Store>,
    claimer: Claimer,
    tally: Tally,
    beat: () => Promise<void> | undefined,
  ) {
    this.#store = store;
    this.#policies = policies;
    this.#claimer = claimer;
    this.#tally = tally;
    this.#beat = beat;
  }

  /**
   * Settles `batch` (taken in hand at `startedAt`, performance.now()). Resolves to what
   * the write claimed, or undefined when it did not claim (nothing to write, or a backend
   * that claims apart).
   */
  async settle(
    batch: readonly Held[],
    startedAt: number,
    next?: ClaimNext,
  ): Promise<readonly Lease[] | undefined> {
    // A heartbeat running now must not extend a lease this write is about to close.
    const beat = this.#beat();
    if (beat !== undefined) await beat;
    const unstarted: Held[] = [];
    const ran: Held[] = [];
    for (const held of batch) {
      if (held.state === 'running') {
        // Forced stop: the handler is abandoned, its lease left to expire.
        const { eventId, generation } = held.lease;
        this.#tally.abandoned.push({ eventId, generation, leaseUntil: held.leaseUntil });
        this.#claimer.held.delete(held);
        continue;
      }
      if (held.state === 'waiting') unstarted.push(held);
      else if (held.result !== undefined) ran.push(held);
      if (held.state !== 'lost') held.state = 'recording';
    }
    let unsettled: Held[] = [...unstarted, ...ran];
    try {
      if (unstarted.length > 0) await this.#release(unstarted);
      unsettled = ran;
      if (ran.length === 0) {
        this.#tally.settled(record(batch, [], unstarted, startedAt), 0);
        return undefined;
      }
      // Lost items are recorded too: the fence refuses their late ACK (counted once).
      // The held messages themselves are the results: settle puts one in `ran` only with its result.
      const results = ran as readonly (Held & ClaimResult)[];
      const done = await this.#complete(results, next);
      if (done.lost.length > 0) this.#claimer.lost(done.lost, false);
      const settledAt = performance.now();
      this.#tally.recorded(done.outcomes, ran, settledAt);
      this.#tally.settled(
        record(batch, done.outcomes, unstarted, startedAt, settledAt),
        ran.length,
      );
      unsettled = [];
      return done.claimed;
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        for (const held of unsettled) {
          if (held.state === 'lost') continue;
          held.state = 'returning';
          this.#returning.push(held);
        }
        // At once if a connection serves; else the next claim tries first.
        await this.giveBack().catch(() => {});
      }
      throw error;
    } finally {
      for (const held of batch) if (held.state !== 'returning') this.#claimer.held.delete(held);
    }
  }

  /**
   * Records `results` through the one result writer, each by its queue's policy (the
   * backoff and attempts of a failure): one write for a batch of one queue, as every batch
   * claimed is; one per queue for a batch gathered at the end from several.
   */
  async #complete(
    results: readonly (Held & ClaimResult)[],
    next: ClaimNext | undefined,
  ): Promise<CompleteResult> {
    const byQueue = new Map<string, (Held & ClaimResult)[]>();
    for (const held of results) {
      const group = byQueue.get(held.queue);
      if (group === undefined) byQueue.set(held.queue, [held]);
      else group.push(held);
    }
    let claimNext = next;
    const done: CompleteResult = { outcomes: [], lost: [] };
    for (const [queue, group] of byQueue) {
      const store = this.#policies.get(queue) ?? this.#store;
      const part = await complete(store, group, claimNext === undefined ? {} : { claimNext });
      claimNext = undefined;
      done.outcomes.push(...part.outcomes);
      done.lost.push(...part.lost);
      if (part.claimed !== undefined) done.claimed = part.claimed;
    }
    return done;
  }

  /**
   * Gives back the messages a write could not settle (see the class): released in one
   * urgent write, attempts not spent. Rejects, keeping them, while the store is still out
   * of reach; a lease that ran out meanwhile is refused by the fence and counted lost.
   * Both completers call it before each claim of their own and at the end.
   */
  async giveBack(): Promise<void> {
    if (this.#returning.length === 0) return;
    const returning = this.#returning.splice(0);
    try {
      const beat = this.#beat();
      if (beat !== undefined) await beat;
      const leases = returning.map((h) => h.lease);
      const { released, lost } = await releaseMany(this.#store, leases, true);
      this.#tally.gaveBack(released);
      this.#claimer.lost(lost, false);
    } catch (error) {
      this.#returning.unshift(...returning);
      throw error;
    }
    for (const held of returning) this.#claimer.held.delete(held);
  }

  async #release(unstarted: readonly Held[]): Promise<void> {
    const leases = unstarted.map((h) => h.lease);
    const { released, lost } = await releaseMany(this.#store, leases);
    this.#tally.released(released);
    this.#claimer.lost(lost, false);
  }
}

function record(
  batch: readonly Held[],
  outcomes: Parameters<Tally['recorded']>[0],
  unstarted: readonly Held[],
  startedAt: number,
  settledAt = performance.now(),
) {
  let lost = 0;
  for (const held of batch) if (held.lostCounted) lost++;
  return {
    claimed: batch.length,
    outcomes,
    lost,
    released: unstarted.length,
    startedAt,
    settledAt,
  };
}
