/**
 * Shared pieces of the conformance suite: a fresh store per test, snapshots to prove
 * "nothing changed", typed-error capture and child processes. Nothing here knows which
 * backend it runs on; that comes through the {@link BackendFactory}.
 */
import { afterEach, beforeEach, expect } from 'bun:test';
import { join } from 'node:path';
import { enqueue, type Handler, type Lease, claim as protocolClaim, type Store } from '@onceq/core';
import { type ClaimResult, type CompleteResult, complete, runHandler } from '@onceq/core/internal';
import {
  type BackendFactory,
  DEMO_BATCH,
  type OpenedStore,
  type TestClock,
  testClock,
} from '../support/factories.ts';
import { rawDb } from '../support/raw-db.ts';
import { runProcess } from '../support/spawn.ts';

export interface TestEnv extends OpenedStore {
  clock: TestClock;
}

/**
 * Registers `beforeEach`/`afterEach` in the enclosing `describe`: every test gets a new,
 * empty store on a model clock at 1000, removed after the test.
 */
export function freshStore(factory: BackendFactory): () => TestEnv {
  let current: TestEnv | undefined;
  beforeEach(async () => {
    const clock = testClock();
    current = { ...(await factory.open(clock)), clock };
  });
  afterEach(async () => {
    const env = current;
    current = undefined;
    await env?.cleanup();
  });
  return () => {
    if (current === undefined) throw new Error('freshStore: no store outside a test');
    return current;
  };
}

/** Enqueues the demo's five lines; asserts the 4 accepted / 1 duplicate of docs/protocol.md §2. */
export async function enqueueDemo(store: Store): Promise<void> {
  expect(await enqueue(store, DEMO_BATCH)).toEqual({ accepted: 4, duplicates: 1 });
}

/** Claims and insists that something was claimable. */
export async function mustClaim(
  store: Store,
  options: { leaseSeconds?: number } = {},
): Promise<Lease> {
  const lease = await protocolClaim(store, options);
  if (lease === null) throw new Error('expected a claimable message, claim returned null');
  return lease;
}

/** Every row of both tables, normalised, to compare before and after a refused operation. */
export async function snapshot(store: Store) {
  const [messages, effects] = await Promise.all([
    rawDb(store, (db) => db.selectFrom('messages').selectAll().orderBy('event_id').execute()),
    rawDb(store, (db) => db.selectFrom('effects').selectAll().orderBy('event_id').execute()),
  ]);
  const numeric = (row: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]),
    );
  return { messages: messages.map(numeric), effects: effects.map(numeric) };
}

/** The effects table as plain values, by event id. */
export async function effectsOf(store: Store) {
  const rows = await rawDb(store, (db) =>
    db
      .selectFrom('effects')
      .select(['event_id', 'category', 'amount_cents'])
      .orderBy('event_id')
      .execute(),
  );
  return rows.map((r) => ({
    eventId: r.event_id,
    category: r.category,
    amountCents: Number(r.amount_cents),
  }));
}

/** Awaits `promise`, insists that it rejects with an instance of `type`, and returns the error. */
export async function rejection<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    return error as E;
  }
  throw new Error(`expected a rejection with ${type.name}, but it resolved`);
}

/** A handler that throws `error` for the listed event ids and defers to `base` otherwise. */
export function throwingFor(base: Handler, ids: readonly string[], error: () => Error): Handler {
  return (payload, message) => {
    if (ids.includes(message.eventId)) throw error();
    return base(payload, message);
  };
}

// ---------------------------------------------------------------------------
// Child processes: real `bun` processes that open the same store by target.

/**
 * The worker's path for `leases`, in one call: each handler on the payload its claim
 * read (the one runner), then one {@link complete} of all results.
 */
export async function handleAll(
  store: Store,
  leases: readonly Lease[],
  handler: Handler,
): Promise<CompleteResult> {
  const results: ClaimResult[] = [];
  for (const lease of leases) {
    const context = { ...lease, signal: new AbortController().signal, store };
    results.push({ lease, result: await runHandler(handler, lease.payload, context) });
  }
  return complete(store, results);
}

export type ChildScript = 'child-crash.ts' | 'child-claimer.ts' | 'child-consumer.ts';

export interface ChildResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The argv every child needs to open this test's store at model second `now`. */
export function storeArgs(env: TestEnv, now: number): string[] {
  return [
    '--target',
    env.target,
    ...(env.schema === undefined ? [] : ['--schema', env.schema]),
    '--now',
    String(now),
  ];
}

/** Starts a child script; `done` resolves once it exited and its output was read. */
export function startChild(script: ChildScript, args: string[]): Promise<ChildResult> {
  return runProcess([
    process.execPath,
    join(import.meta.dir, '..', 'support', script),
    ...args,
  ]).then(({ code, stdout, stderr }) => ({ exitCode: code, stdout, stderr }));
}

/** Fails with the child's output unless it exited with `code`. */
export function expectExit(result: ChildResult, code: number): void {
  if (result.exitCode !== code) {
    throw new Error(
      `child exited ${result.exitCode}, expected ${code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

/** Parses the one JSON document a child prints on success, failing loudly otherwise. */
export function childJson<T>(result: ChildResult): T {
  if (result.exitCode !== 0) {
    throw new Error(`child exited ${result.exitCode}: ${result.stderr.trim() || result.stdout}`);
  }
  return JSON.parse(result.stdout) as T;
}
