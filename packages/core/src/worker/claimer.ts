import type { ClaimInput } from '../driver/driver.ts';
import type { LeaseLostError } from '../errors.ts';
import { claimMany } from '../queue/claim.ts';
import type { ExtendedLease } from '../queue/extend.ts';
import type { Lease } from '../types.ts';
import { byKey, Held, heldKey } from './held.ts';
import type { WorkerQueue } from './options.ts';
import type { Tally } from './tally.ts';

/** A claim the record's own write may make: what {@link Claimer.claimWith} hands the write. */
export type ClaimNext = Omit<ClaimInput, 'now'>;

export interface ClaimerOptions {
  /** Messages per claim. */
  batch: number;
  /** Messages this worker may claim in its life (`max`); Infinity: no limit. */
  max: number;
  /** The queues claimed from, in turn (at least one), each claimed under its own policy. */
  queues: readonly WorkerQueue[];
  /** Whether the worker still takes new work (false once it is stopping). */
  running(): boolean;
  /** Work was found: the next idle look comes quickly again. */
  busy(): void;
}

/**
 * The worker's claims and the leases they gave it (River's producer): every message
 * claimed and not yet recorded, released or abandoned is {@link held} from the moment its
 * claim returns, so the heartbeat renews a batch claimed ahead like the one being handled.
 *
 * `max` is counted here and only here: {@link room} is the one question every claim asks
 * ("how many may I claim now?"), and it counts the claims still in flight, whether a
 * claim of their own or one a record's write makes.
 */
export class Claimer {
  /** Every message in the worker's hands, from its claim until it is recorded or released. */
  readonly held = new Set<Held>();
  readonly #options: ClaimerOptions;
  readonly #tally: Tally;
  /** Messages asked for by claims still in flight. */
  #claiming = 0;
  /** The queue the next claim takes from: each claim goes on to the next queue. */
  #turn = 0;
  /** Each queue's lease length, by name. */
  readonly #leaseSeconds: ReadonlyMap<string, number>;

  constructor(options: ClaimerOptions, tally: Tally) {
    this.#options = options;
    this.#leaseSeconds = new Map(
      options.queues.map((q) => [q.name, q.store.protocol.leaseSeconds]),
    );
    this.#tally = tally;
  }

  /** How many messages the next claim may take now: `batch`, or what is left of `max`; 0 when stopping. */
  room(): number {
    if (!this.#options.running()) return 0;
    const left = this.#options.max - this.#tally.summary.claimed - this.#claiming;
    return Math.max(0, Math.min(this.#options.batch, left));
  }

  /** `max` is reached and no claim is in flight: the worker will never claim again. */
  get exhausted(): boolean {
    return this.#claiming === 0 && this.#tally.summary.claimed >= this.#options.max;
  }

  /** Claims the next batch in a transaction of its own; none when there is no {@link room}. */
  claim(): Promise<Held[]> {
    return this.claimWith(async () => undefined).then((batch) => batch ?? []);
  }

  /**
   * Runs `write` (a record) and claims the next batch with it: `write` gets the claim to
   * make in its own commit, or undefined when there is no {@link room}, and returns what
   * it claimed, or undefined when it did not claim (then the claim is made here, in a
   * transaction of its own, right after). Resolves to the batch now held, or null when
   * nothing was to be claimed.
   */
  async claimWith(
    write: (next: ClaimNext | undefined) => Promise<readonly Lease[] | undefined>,
  ): Promise<Held[] | null> {
    const limit = this.room();
    if (limit === 0) {
      await write(undefined);
      return null;
    }
    this.#claiming += limit;
    try {
      const { queues } = this.#options;
      // Each claim passes its queue's policy: the lease it gives, and the attempts and
      // on-dead rule its recovery of that queue's expired leases applies.
      let queue = this.#nextQueue();
      const { maxAttempts, onDead, leaseSeconds } = queue.store.protocol;
      let leases =
        (await write({ limit, leaseSeconds, maxAttempts, queue: queue.name, onDead })) ??
        (await claimMany(queue.store, { limit, queue: queue.name }));
      // Nothing in this queue: the worker's other queues, each once, before it idles.
      for (let i = 1; leases.length === 0 && i < queues.length; i++) {
        queue = this.#nextQueue();
        leases = await claimMany(queue.store, { limit, queue: queue.name });
      }
      // Held at once, before the claim stops counting as in flight.
      return this.#hold(leases, queue);
    } finally {
      this.#claiming -= limit;
    }
  }

  #nextQueue(): WorkerQueue {
    const { queues } = this.#options;
    const queue = queues[this.#turn % queues.length] as WorkerQueue;
    this.#turn++;
    return queue;
  }

  #hold(leases: readonly Lease[], queue: WorkerQueue): Held[] {
    if (leases.length === 0) return [];
    if (this.held.size === 0) this.#tally.progressAt = performance.now();
    this.#tally.claimed(leases, queue.name, queue.store.clock);
    const batch: Held[] = [];
    for (const lease of leases) {
      const held = new Held(lease, queue.name);
      this.held.add(held);
      batch.push(held);
    }
    this.#options.busy();
    return batch;
  }

  /**
   * The leases a heartbeat renews, by the lease length of their queue: claimed and not
   * being recorded or lost (those to give back too).
   */
  renewable(): Map<number, Lease[]> {
    const bySeconds = new Map<number, Lease[]>();
    for (const held of this.held) {
      if (held.state === 'recording' || held.state === 'lost') continue;
      const seconds = this.#leaseSeconds.get(held.queue) as number;
      let leases = bySeconds.get(seconds);
      if (leases === undefined) {
        leases = [];
        bySeconds.set(seconds, leases);
      }
      leases.push(held.lease);
    }
    return bySeconds;
  }

  /** A heartbeat renewed these leases. */
  extended(extended: readonly ExtendedLease[]): void {
    const keyed = extended.length > 0 ? byKey(this.held) : undefined;
    for (const lease of extended) {
      const held = keyed?.get(heldKey(lease));
      if (held !== undefined) held.leaseUntil = lease.leaseUntil;
    }
    this.#tally.extended(extended.length);
  }

  /** Counts each lost lease once; one a heartbeat found lost also has its handler stopped. */
  lost(errors: readonly LeaseLostError[], byHeartbeat: boolean): void {
    const keyed = errors.length > 0 ? byKey(this.held) : undefined;
    for (const error of errors) {
      const held = keyed?.get(heldKey(error));
      if (held === undefined || held.lostCounted) continue;
      held.lostCounted = true;
      if (byHeartbeat) {
        if (held.state !== 'recording') held.state = 'lost';
        held.abort(error);
      }
      this.#tally.lost(error, held.queue);
    }
  }
}
