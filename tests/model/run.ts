/**
 * Runs one generated step sequence on the real store and on the reference model, and
 * checks after every step that both agree and that the invariants of the protocol hold
 * on what the store really holds.
 */
import { expect } from 'bun:test';
import {
  apply as applyOne,
  BatchRejectedError,
  enqueue,
  fail,
  type Handler,
  type Lease,
  LeaseLostError,
  NotDeadError,
  NotFoundError,
  PermanentFailure,
  redrive,
  type Store,
  skip,
  status,
  TemporaryFailure,
} from '@onceq/core';
import { claimMany, type Database } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import type { Kysely } from 'kysely';
import { handleAll } from '../conformance/harness.ts';
import type { TestClock } from '../support/factories.ts';
import { line } from '../support/factories.ts';
import {
  type HandlerChoice,
  KEYS,
  MAX_ATTEMPTS,
  type Model,
  type ModelLease,
  PAYLOADS,
} from './reference.ts';
import { type Crash, IDS, type Step } from './steps.ts';

/** The throw that stands for a process dying before COMMIT. */
class CrashBeforeCommit extends Error {}

/** `store` whose transactions run to their end and then die before COMMIT (all rolled back). */
function crashingBeforeCommit(store: Store): Store {
  return {
    ...store,
    transact: (fn) =>
      store.transact(async (x) => {
        await fn(x);
        throw new CrashBeforeCommit('crash before COMMIT');
      }),
    // A statement that commits by itself (PostgreSQL's claim and money ACK) runs in a
    // transaction that never commits.
    read: (fn) =>
      store.transact(async (x) => {
        await fn(x);
        throw new CrashBeforeCommit('crash before COMMIT');
      }),
  };
}

/** A real handler doing per event what the model's choice says. */
function handlerFor(choices: ReadonlyMap<string, HandlerChoice>): Handler {
  return (payload, context) => {
    const choice = choices.get(context.eventId) ?? 'v1';
    if (choice === 'temporary') throw new TemporaryFailure('model_temporary', 'dependency down');
    if (choice === 'permanent') throw new PermanentFailure('model_permanent', 'refused');
    if (choice === 'throw') throw new Error('a handler bug');
    return handlers[choice](payload, context);
  };
}

/** The state the runner carries between steps. */
export interface Run {
  store: Store;
  /** A connection of the test's own to the store's database (tests/support/raw-db.ts). */
  raw: Kysely<Database>;
  clock: TestClock;
  model: Model;
  /** Every lease handed out so far, stale ones included (real and model agree on them). */
  leases: Lease[];
  /** Highest generation seen per event: generations never go down. */
  generations: Map<string, number>;
}

export async function runStep(run: Run, step: Step): Promise<void> {
  const { store, model } = run;
  switch (step.t) {
    case 'enqueue': {
      const lines = step.lines.map(([i, p]) => [IDS[i] as string, p] as const);
      const text = lines
        .map(([id, p]) => line(id, (PAYLOADS[p] as (typeof PAYLOADS)[number]).text))
        .join('\n');
      const key = KEYS[step.key] ?? null;
      const expected = model.enqueue(lines, key);
      if (expected === 'conflict') {
        await expect(enqueueOn(store, text, key)).rejects.toBeInstanceOf(BatchRejectedError);
      } else {
        expect(await enqueueOn(store, text, key)).toEqual(expected);
      }
      return;
    }
    case 'claim': {
      const real = await claimMany(store, { limit: step.limit, leaseSeconds: step.lease });
      const expected = model.claim(step.limit, step.lease);
      expect(real.map(ref)).toEqual(expected);
      run.leases.push(...real);
      return;
    }
    case 'apply': {
      const lease = pick(run.leases, step.lease);
      if (lease === undefined) return;
      await applyStep(run, [lease], new Map([[lease.eventId, step.handler]]), step.crash, true);
      return;
    }
    case 'completeMany': {
      const chosen = new Map<string, Lease>();
      for (const i of step.leases) {
        const lease = pick(run.leases, i);
        if (lease !== undefined && !chosen.has(lease.eventId)) chosen.set(lease.eventId, lease);
      }
      if (chosen.size === 0) return;
      const leases = [...chosen.values()];
      const choices = new Map(leases.map((l, i) => [l.eventId, step.handlers[i] ?? 'v1']));
      await applyStep(run, leases, choices, step.crash, false);
      return;
    }
    case 'fail': {
      const lease = pick(run.leases, step.lease);
      if (lease === undefined) return;
      const input = { kind: step.kind, code: 'model_fail' };
      if (model.holds(lease)) {
        const expected = model.fail(lease, step.kind, 'model_fail');
        expect((await fail(store, lease, input)).state).toBe(
          expected === 'retry' ? 'ready' : 'dead',
        );
      } else {
        await expect(fail(store, lease, input)).rejects.toBeInstanceOf(LeaseLostError);
      }
      return;
    }
    case 'advance': {
      const target = advanceTarget(model, step);
      if (target !== undefined && target > model.now) {
        model.now = target;
        run.clock.set(target);
      }
      return;
    }
    case 'redrive': {
      const ids = step.ids === 'all' ? 'all' : step.ids.map((i) => IDS[i] as string);
      const expected = model.redrive(ids);
      if (expected === 'refused') {
        const error = await redrive(store, ids).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error instanceof NotFoundError || error instanceof NotDeadError).toBe(true);
      } else {
        expect(await redrive(store, ids)).toEqual(expected);
      }
      return;
    }
    case 'skip': {
      const ids = step.ids.map((i) => IDS[i] as string);
      const expected = model.skip(ids);
      if (expected === 'refused') {
        const error = await skip(store, ids).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error instanceof NotFoundError || error instanceof NotDeadError).toBe(true);
      } else {
        expect(await skip(store, ids)).toEqual(expected);
      }
      return;
    }
  }
}

function enqueueOn(store: Store, text: string, key: string | null) {
  return enqueue(store, `${text}\n`, key === null ? {} : { key });
}

async function applyStep(
  run: Run,
  leases: Lease[],
  choices: Map<string, HandlerChoice>,
  crash: Crash,
  single: boolean,
): Promise<void> {
  const { store, model } = run;
  const handler = handlerFor(choices);
  if (crash === 'before-commit') {
    // Everything rolls back: the model does not move.
    const crashing = crashingBeforeCommit(store);
    const attempt = single
      ? applyOne(crashing, leases[0] as Lease, handler)
      : handleAll(crashing, leases, handler);
    const error = await attempt.then(
      () => undefined,
      (e: unknown) => e,
    );
    // apply's fenced read refuses a lease the model says is gone before any write.
    const refusedEarly = error instanceof LeaseLostError && !leases.some((l) => model.holds(l));
    expect(error instanceof CrashBeforeCommit || refusedEarly).toBe(true);
    return;
  }
  const held = leases.filter((l) => model.holds(l));
  const expected = new Map(
    held.map((l) => [l.eventId, model.apply(l, choices.get(l.eventId) ?? 'v1')]),
  );
  if (single) {
    const attempt = applyOne(store, leases[0] as Lease, handler);
    if (held.length === 0) {
      await expect(attempt).rejects.toBeInstanceOf(LeaseLostError);
      return;
    }
    const outcome = await attempt;
    // After COMMIT the reply is lost: the caller learns nothing, the store keeps it.
    if (crash === 'none')
      expect<string>(outcome.outcome).toBe(expected.get(outcome.eventId) as string);
    return;
  }
  const result = await handleAll(store, leases, handler);
  if (crash === 'reply-lost') return;
  expect(result.lost.map((e) => e.eventId).sort()).toEqual(
    leases
      .filter((l) => !expected.has(l.eventId))
      .map((l) => l.eventId)
      .sort(),
  );
  expect(Object.fromEntries(result.outcomes.map((o) => [o.eventId, o.outcome]))).toEqual(
    Object.fromEntries(expected),
  );
}

function ref(lease: Lease): ModelLease {
  return { eventId: lease.eventId, generation: lease.generation };
}

function pick<T>(items: readonly T[], index: number): T | undefined {
  return items.length === 0 ? undefined : items[index % items.length];
}

function advanceTarget(model: Model, step: Extract<Step, { t: 'advance' }>): number | undefined {
  const all = [...model.messages.values()];
  switch (step.to) {
    case 'plus1':
      return model.now + 1;
    case 'plus2':
      return model.now + 2;
    case 'lease-boundary':
    case 'lease-boundary-1': {
      const leased = all.filter((m) => m.leaseUntil !== null);
      const m = pick(leased, step.pick);
      if (m === undefined) return undefined;
      return (m.leaseUntil as number) - (step.to === 'lease-boundary' ? 0 : 1);
    }
    case 'available': {
      const waiting = all.filter((m) => m.state === 'ready' && m.availableAt > model.now);
      return pick(waiting, step.pick)?.availableAt;
    }
  }
}

/** What the store holds, read with plain queries (not through the protocol). */
async function snapshot(raw: Kysely<Database>) {
  const messages = await raw.selectFrom('messages').selectAll().orderBy('event_id').execute();
  const effects = await raw.selectFrom('effects').selectAll().orderBy('event_id').execute();
  return { messages, effects };
}

/** The invariants, on the real store, and agreement with the model. */
export async function checkInvariants(run: Run): Promise<void> {
  const { store, model } = run;
  const { messages, effects } = await snapshot(run.raw);
  const effectOf = new Map<string, { category: string; amountCents: number }>();
  for (const e of effects) {
    // At most one effect per event.
    expect(effectOf.has(e.event_id)).toBe(false);
    effectOf.set(e.event_id, { category: e.category, amountCents: Number(e.amount_cents) });
  }
  for (const row of messages) {
    const m = model.messages.get(row.event_id);
    expect(m).toBeDefined();
    if (m === undefined) return;
    const real = {
      eventId: row.event_id,
      key: row.ordering_key,
      state: row.state,
      attempts: Number(row.attempts),
      generation: Number(row.generation),
      payload: row.payload,
      leaseUntil: row.lease_until === null ? null : Number(row.lease_until),
      availableAt: row.state === 'ready' ? Number(row.available_at) : null,
      lastErrorCode: row.state === 'dead' ? row.last_error_code : null,
      effect: effectOf.get(row.event_id) ?? null,
    };
    // done ⇔ effect; leased ⇔ lease_until set; attempts within the cycle's budget.
    expect(real.state === 'done').toBe(real.effect !== null);
    expect(real.state === 'leased').toBe(real.leaseUntil !== null);
    expect(real.attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
    // Generations never go down.
    expect(real.generation).toBeGreaterThanOrEqual(run.generations.get(row.event_id) ?? 0);
    run.generations.set(row.event_id, real.generation);
    // The payload (a DLQ message's too) is kept byte for byte, and all the rest agrees.
    expect(real).toEqual({
      eventId: m.eventId,
      key: m.key,
      state: m.state,
      attempts: m.attempts,
      generation: m.generation,
      payload: m.payload,
      leaseUntil: m.leaseUntil,
      availableAt: m.state === 'ready' ? m.availableAt : null,
      lastErrorCode: m.state === 'dead' ? m.lastErrorCode : null,
      effect: m.effect,
    });
  }
  expect(messages.length).toBe(model.messages.size);
  // Per key, on what the store holds: the finished messages (done, skipped) are a prefix
  // in enqueue order, and at most one message is its head (ready, leased or dead).
  const byKey = new Map<string, typeof messages>();
  for (const row of messages) {
    if (row.ordering_key === null) continue;
    byKey.set(row.ordering_key, [...(byKey.get(row.ordering_key) ?? []), row]);
  }
  for (const rows of byKey.values()) {
    const states = rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map((r) => r.state);
    const finished = (s: string) => s === 'done' || s === 'skipped';
    const firstOpen = states.findIndex((s) => !finished(s));
    if (firstOpen >= 0) {
      expect(states.slice(firstOpen + 1).every((s) => s === 'waiting')).toBe(true);
      expect(states[firstOpen]).not.toBe('waiting');
    }
  }
  const report = await status(store);
  const expected = model.totals();
  expect({ effects: report.effects, totals: report.totals, total: report.total }).toEqual(expected);
}
