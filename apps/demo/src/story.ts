/**
 * The fixed story of docs/protocol.md §6, step by step, on an open store with a model clock. It
 * prints each step as it happens and returns the figures; {@link checkFigures} compares
 * them with the numbers of the spec.
 */

import type { StatusReport } from '@onceq/core';
import {
  apply,
  claim,
  enqueue,
  type Handler,
  redrive,
  type Store,
  show,
  status,
} from '@onceq/core';
import type { ModelClock } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { CrashChildResult } from './crash-child.ts';
import { failingOnce } from './failing-once.ts';

/** The model second the story starts at. */
export const DEMO_START = 1000;
/** The demo's lease (docs/protocol.md §6: a 2-second lease). */
export const DEMO_LEASE_SECONDS = 2;

/** The input of docs/protocol.md §6: E0001 twice, then E0002, E0003, E0004. */
export const DEMO_INPUT = [
  '{"event_id":"E0001","payload":{"category":"book","amount_cents":10000}}',
  '{"event_id":"E0001","payload":{"category":"book","amount_cents":10000}}',
  '{"event_id":"E0002","payload":{"category":"pen","amount_cents":2000}}',
  '{"event_id":"E0003","payload":{"category":"book","amount_cents":5000}}',
  '{"event_id":"E0004","payload":{"category":"toy","amount_cents":3000}}',
].join('\n');

/** One message as the figures record it. */
export interface MessageBrief {
  state: string;
  attempts: number;
  generation: number;
  available_at: number;
  lease_until: number | null;
  last_error_code: string | null;
  effect: boolean;
}

/** A store snapshot plus the one message a phase is about. */
export type Phase = StatusReport & { message: MessageBrief };

/** Everything the story measured; the `--json` document is built from it. */
export interface DemoFigures {
  enqueue: { accepted: number; duplicates: number };
  /** Who got each claim at 1000, in order (the third one is the crash child's). */
  claims_1000: string[];
  /** The messages right after the 1000 steps. */
  after_1000: Record<string, MessageBrief>;
  crash: {
    exit_code: number;
    claimed: string | null;
    generation: number | null;
    /** The child saw its effect row inside its open transaction. */
    inserted_before_exit: boolean;
  };
  snapshot: StatusReport;
  claims_1001: string[];
  after_1001: Record<string, MessageBrief>;
  claims_1002: string[];
  recovery: MessageBrief;
  final: StatusReport;
  again: { accepted: number; duplicates: number; total: number };
  redrive_v1: Phase;
  redrive_v2: Phase;
}

/** What the story needs from its runner. */
export interface StoryHooks {
  clock: ModelClock;
  /** Prints one step, prefixed with the model second. */
  step(text: string): void;
  /** Prints a snapshot table. */
  snapshot(title: string, report: StatusReport): void;
  /** Runs the crash child against the same store and waits for it. */
  crash(): Promise<CrashChildResult>;
}

const IDS = ['E0001', 'E0002', 'E0003', 'E0004'] as const;

export async function runStory(store: Store, hooks: StoryHooks): Promise<DemoFigures> {
  const { clock, step } = hooks;
  clock.set(DEMO_START);

  const enqueued = await enqueue(store, DEMO_INPUT);
  step(
    `enqueue 5 lines: ${enqueued.accepted} accepted, ${enqueued.duplicates} duplicate${enqueued.duplicates === 1 ? '' : 's'}`,
  );

  const claims1000: string[] = [];
  claims1000.push(...(await claimAndApply(store, handlers.v1, step)));
  // The controlled temporary error: E0002 fails on its first attempt only.
  claims1000.push(
    ...(await claimAndApply(store, failingOnce(handlers.v1, new Set(['E0002'])), step)),
  );

  // No transaction is open here: the child's BEGIN IMMEDIATE would wait for it.
  const child = await hooks.crash();
  claims1000.push(child.eventId ?? '-');
  const e0003 = await brief(store, 'E0003');
  step(
    `crash child (pid ${child.pid}) claimed ${child.eventId ?? 'nothing'} (generation ${child.generation ?? '-'}), ` +
      `inserted its effect${child.inserted ? '' : ' (NOT seen)'}, exited with code ${child.exitCode} before COMMIT`,
  );
  if (child.exitCode !== 86 && child.stderr !== '') step(`crash child stderr: ${child.stderr}`);
  step(
    `after the crash: E0003 has ${e0003.effect ? 'an effect' : 'no effect'}, state ${e0003.state}` +
      (e0003.lease_until === null ? '' : ` until ${e0003.lease_until}`),
  );

  claims1000.push(...(await claimAndApply(store, handlers.v1, step)));
  const after1000 = await briefs(store);
  const snapshot = await status(store);
  hooks.snapshot(`snapshot at ${clock()}`, snapshot);

  clock.set(DEMO_START + 1);
  step(`E0002 is due again; E0003's lease holds until ${e0003.lease_until ?? '-'}`);
  const claims1001 = await drain(store, handlers.v1, step);
  const after1001 = await briefs(store);

  clock.set(DEMO_START + 2);
  step("E0003's lease has expired: the next claim recovers it");
  const claims1002 = await drain(store, handlers.v1, step);
  const recovery = await brief(store, 'E0003');
  const final = await status(store);
  hooks.snapshot(`final at ${clock()}`, final);

  const againResult = await enqueue(store, DEMO_INPUT);
  const afterAgain = await status(store);
  step(
    `enqueue the same 5 lines again: ${againResult.accepted} accepted, ${againResult.duplicates} duplicates, total ${afterAgain.total}`,
  );

  const redriveV1 = await redrivePhase(store, 'v1', step);
  hooks.snapshot(`after redrive under v1 at ${clock()}`, redriveV1);
  const redriveV2 = await redrivePhase(store, 'v2', step);
  hooks.snapshot(`after redrive under v2 at ${clock()}`, redriveV2);

  return {
    enqueue: enqueued,
    claims_1000: claims1000,
    after_1000: after1000,
    crash: {
      exit_code: child.exitCode,
      claimed: child.eventId,
      generation: child.generation,
      inserted_before_exit: child.inserted,
    },
    snapshot,
    claims_1001: claims1001,
    after_1001: after1001,
    claims_1002: claims1002,
    recovery,
    final,
    again: { ...againResult, total: afterAgain.total },
    redrive_v1: redriveV1,
    redrive_v2: redriveV2,
  };
}

async function redrivePhase(
  store: Store,
  version: 'v1' | 'v2',
  step: (text: string) => void,
): Promise<Phase> {
  const redriven = await redrive(store, ['E0004']);
  step(`redrive ${redriven.join(', ')} and work under handler ${version}`);
  await drain(store, handlers[version], step);
  return { ...(await status(store)), message: await brief(store, 'E0004') };
}

/** Claims one message, applies `handler` and prints the outcome; null when nothing is claimable. */
async function step1(
  store: Store,
  handler: Handler,
  step: (text: string) => void,
): Promise<string | null> {
  const lease = await claim(store);
  if (lease === null) return null;
  const outcome = await apply(store, lease, handler);
  const head = `${lease.eventId} claimed (generation ${lease.generation}, attempt ${lease.attempt})`;
  if (outcome.outcome === 'done') {
    const { effect } = outcome;
    step(
      `${head} → done: ${effect === null ? outcome.summary : `${effect.category} ${effect.amountCents}`}`,
    );
  } else if (outcome.outcome === 'retry') {
    step(`${head} → temporary error ${outcome.code}: ready at ${outcome.availableAt}`);
  } else {
    step(`${head} → dead (${outcome.code}): ${outcome.detail}`);
  }
  return lease.eventId;
}

/** {@link step1} once: the claimed id, or none. */
async function claimAndApply(
  store: Store,
  handler: Handler,
  step: (text: string) => void,
): Promise<string[]> {
  const id = await step1(store, handler, step);
  if (id === null) step('nothing claimable');
  return id === null ? [] : [id];
}

/** The worker loop with a line per message: until nothing is claimable now. */
async function drain(
  store: Store,
  handler: Handler,
  step: (text: string) => void,
): Promise<string[]> {
  const claimed: string[] = [];
  for (
    let id = await step1(store, handler, step);
    id !== null;
    id = await step1(store, handler, step)
  )
    claimed.push(id);
  if (claimed.length === 0) step('nothing claimable');
  return claimed;
}

async function brief(store: Store, eventId: string): Promise<MessageBrief> {
  const m = await show(store, eventId);
  return {
    state: m.state,
    attempts: m.attempts,
    generation: m.generation,
    available_at: m.availableAt,
    lease_until: m.leaseUntil,
    last_error_code: m.lastErrorCode,
    effect: m.effect !== null,
  };
}

async function briefs(store: Store): Promise<Record<string, MessageBrief>> {
  const out: Record<string, MessageBrief> = {};
  for (const id of IDS) out[id] = await brief(store, id);
  return out;
}
