/**
 * Idle workers and the NOTIFY of an enqueue: every listening worker of the schema hears
 * it, but they must not all claim (worker/wakeup.ts). A worker whose claim after a wake
 * came back empty reacts to the next wake later and looks before it claims, so a trickle
 * of single-message enqueues is claimed by one worker each, not by every idle worker;
 * and every message is still done exactly once.
 *
 * The test owns the order of events, not the machine's speed: each round starts and
 * ends with every worker asleep, and a look (the `next-due` read a worker makes before it claims
 * after a delayed wake or a poll) by any worker but the last round's winner is held until
 * the round's message has been claimed. That is the order a backed-off worker's delay
 * exists to give; held, the count no longer depends on the delay outlasting the
 * winner's claim. A worker that claims on a wake without looking is never held, so a
 * herd still shows: a control disables the back-off and sees the check fail.
 *
 * Runs under the PostgreSQL rule of tests/support/backends.ts.
 */
import { expect, test } from 'bun:test';
import { enqueue, openStore, type Store, Worker } from '@onceq/core';
import { Wakeup } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { SQL } from 'bun';
import { describePostgres } from '../support/backends.ts';

const CLAIM = 'claim-with-recovery';
const LOOK = 'next-due';
const WORKERS = 6;

/** One round: how many distinct workers claimed (each worker may claim more than once). */
interface Round {
  claimers: number;
}

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Bounded wait for `condition` (polled every 10 ms, up to 60 s). */
async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 6000; i++) {
    if (await condition()) return;
    await Bun.sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Runs `rounds` single-message enqueues against {@link WORKERS} idle workers in a fresh
 * schema and returns what each round cost; asserts every message done exactly once.
 */
async function claimRounds(url: string, rounds: number): Promise<Round[]> {
  const schema = `t_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const stores: Store[] = [];
  const admin = new SQL(url);
  /** Per worker: statements in flight, and the name of the last one started. */
  const activity = Array.from({ length: WORKERS }, () => ({ inFlight: 0, last: '' }));
  let claimedBy = new Set<number>();
  /** The worker whose claim returned the last round's message. */
  let winner: number | undefined;
  // Open between an enqueue and the first claim that returned its message.
  let unclaimed: ReturnType<typeof signal> | undefined;
  /** Whose looks are held this round: every worker's but the last winner's. */
  let held = (_i: number) => false;

  /**
   * Worker `i`'s store, its claims noted and its looks held while the round's message
   * is unclaimed (never the last winner's: the worker expected to claim must not wait).
   */
  function observed(store: Store, i: number): Store {
    const worker = activity[i] as { inFlight: number; last: string };
    return {
      ...store,
      read: (fn) =>
        store.read((x) =>
          fn({
            ...x,
            query: (async (statement, parameters) => {
              const name = typeof statement === 'string' ? '' : statement.name.split('/')[1];
              worker.last = name ?? '';
              worker.inFlight++;
              try {
                if (name === LOOK && unclaimed !== undefined && held(i)) await unclaimed.promise;
                const result = await x.query(statement as never, parameters);
                if (name === CLAIM) {
                  claimedBy.add(i);
                  if (result.rows.length > 0) {
                    winner = i;
                    unclaimed?.resolve();
                  }
                }
                return result;
              } finally {
                worker.inFlight--;
              }
            }) as typeof x.query,
          }),
        ),
    };
  }

  const done = async () => {
    const [row] = await admin.unsafe(
      `SELECT count(*)::int AS n, coalesce(sum(attempts), 0)::int AS attempts
       FROM "${schema}".messages WHERE state = 'done'`,
    );
    return row as { n: number; attempts: number };
  };
  // Every worker asleep: nothing in flight, and each one's last statement the look
  // before its sleep (checked from a timer, after the look's continuation ran).
  const asleep = () => activity.every((w) => w.inFlight === 0 && w.last === LOOK);

  for (let i = 0; i < WORKERS + 1; i++) stores.push(await openStore(url, { schema }));
  const [producer, ...workerStores] = stores as [Store, ...Store[]];
  const workers = workerStores.map(
    (store, i) => new Worker(observed(store, i), handlers.v1, { batch: 10 }),
  );
  try {
    for (const worker of workers) await worker.start();
    const perRound: Round[] = [];
    await until('every worker asleep', asleep);
    for (let round = 0; round < rounds; round++) {
      claimedBy = new Set();
      const last = winner;
      held = (i) => last !== undefined && i !== last;
      unclaimed = signal();
      const id = `E${String(round).padStart(4, '0')}`;
      await enqueue(
        producer,
        `{"event_id":"${id}","payload":{"category":"book","amount_cents":${round + 1}}}\n`,
      );
      // The message done (the poll alone would take up to 5 s to find it).
      await until(`${id} done`, async () => (await done()).n > round);
      await unclaimed.promise;
      unclaimed = undefined;
      // Every worker that heard the notification and claimed has claimed by now.
      await until('every worker asleep', asleep);
      perRound.push({ claimers: claimedBy.size });
    }
    expect(await done()).toEqual({ n: rounds, attempts: rounds });
    return perRound;
  } finally {
    // A look still held must not keep a worker from stopping.
    unclaimed?.resolve();
    unclaimed = undefined;
    for (const worker of workers) await worker.stop();
    for (const store of stores) await store.close();
    try {
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await admin.close();
    }
  }
}

/**
 * After the first round (where every worker is idle and reacts at once), each
 * notification is claimed by one worker (its claim of the message, its claims ahead and
 * after the record), none by the workers that lost a race.
 */
function oneClaimerPerNotification(rounds: readonly Round[]): boolean {
  return rounds.slice(1).every((r) => r.claimers === 1);
}

describePostgres('idle workers and NOTIFY', (url) => {
  test('single-message enqueues are claimed by one worker each, not by every idle worker', async () => {
    const rounds = await claimRounds(url, 12);
    expect(rounds.slice(1)).toEqual(rounds.slice(1).map(() => ({ claimers: 1 })));
    expect(oneClaimerPerNotification(rounds)).toBe(true);
  }, 120_000);

  test('control: without the back-off every idle worker claims on every notification', async () => {
    const lostRace = Wakeup.prototype.lostRace;
    Wakeup.prototype.lostRace = () => {};
    try {
      const rounds = await claimRounds(url, 4);
      expect(oneClaimerPerNotification(rounds)).toBe(false);
    } finally {
      Wakeup.prototype.lostRace = lostRace;
    }
  }, 120_000);
});
