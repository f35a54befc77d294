/**
 * machine.ts, the backend-free state machine: the attempt limit and backoff, the
 * JavaScript fence's reasons and its boundary, claim order, and the transition table
 * (docs/protocol.md §5). No store: these are the rules both statement modules write.
 */
import { describe, expect, test } from 'bun:test';
import type { MessageState } from '@onceq/core';
import { MESSAGE_STATES } from '@onceq/core/admin';
import {
  afterFailure,
  DEFAULT_PROTOCOL,
  ENQUEUED_STATES,
  fenceViolation,
  inClaimOrder,
  TRANSITIONS,
} from '@onceq/core/internal';

const temporary = { kind: 'temporary', code: 'dependency_down' } as const;
const permanent = { kind: 'permanent', code: 'invalid_payload', detail: 'no' } as const;

describe('afterFailure: attempts and backoff', () => {
  test('a temporary failure retries after 1 s, then 2 s, and the third attempt goes dead at once', () => {
    expect(afterFailure(DEFAULT_PROTOCOL, 1, temporary, 1000)).toMatchObject({
      state: 'ready',
      availableAt: 1001,
    });
    expect(afterFailure(DEFAULT_PROTOCOL, 2, temporary, 1000)).toMatchObject({
      state: 'ready',
      availableAt: 1002,
    });
    expect(afterFailure(DEFAULT_PROTOCOL, 3, temporary, 1000)).toMatchObject({
      state: 'dead',
      availableAt: 1000,
    });
  });

  test('a permanent failure goes dead on the first attempt, with its code and detail', () => {
    expect(afterFailure(DEFAULT_PROTOCOL, 1, permanent, 1000)).toEqual({
      state: 'dead',
      availableAt: 1000,
      code: 'invalid_payload',
      detail: 'no',
    });
  });

  test('a missing detail gets the default sentence of its kind; a long one is cut to 500 characters', () => {
    expect(afterFailure(DEFAULT_PROTOCOL, 1, temporary, 1000).detail).toBe(
      'temporary failure reported by the worker',
    );
    const { detail } = afterFailure(
      DEFAULT_PROTOCOL,
      1,
      { ...permanent, detail: 'x'.repeat(501) },
      1,
    );
    expect(detail).toHaveLength(500);
  });

  test('the limit and the backoff come from the store protocol', () => {
    const protocol = { ...DEFAULT_PROTOCOL, maxAttempts: 5, backoffSeconds: () => 7 };
    expect(afterFailure(protocol, 4, temporary, 10)).toMatchObject({
      state: 'ready',
      availableAt: 17,
    });
    expect(afterFailure(protocol, 5, temporary, 10).state).toBe('dead');
  });
});

describe('fenceViolation: the JavaScript half of the fence', () => {
  const row = { state: 'leased', generation: 2, lease_until: 1030 };
  const lease = { eventId: 'E0001', generation: 2 };

  test('a lease holds one second before lease_until and not at it', () => {
    expect(fenceViolation(row, lease, 1029)).toBeNull();
    expect(fenceViolation(row, lease, 1030)).toBe('the lease expired at 1030 (now 1030)');
  });

  test('each refusal names its reason', () => {
    expect(fenceViolation(undefined, lease, 1000)).toBe('no such message');
    expect(fenceViolation({ ...row, generation: 3 }, lease, 1000)).toBe(
      'the message is at generation 3, a newer claim owns it',
    );
    expect(fenceViolation({ ...row, generation: 1 }, lease, 1000)).toBe(
      'generation 2 was never issued (the message is at generation 1)',
    );
    expect(fenceViolation({ ...row, state: 'done' }, lease, 1000)).toBe(
      'the message is done, not leased',
    );
  });
});

describe('claim order and the transition table', () => {
  test('inClaimOrder sorts by available_at, then event_id', () => {
    const rows = [
      { event_id: 'E0003', available_at: 1000 },
      { event_id: 'E0002', available_at: 1001 },
      { event_id: 'E0001', available_at: 1000 },
    ];
    expect(inClaimOrder(rows).map((r) => r.event_id)).toEqual(['E0001', 'E0003', 'E0002']);
  });

  test('done and skipped are terminal, dead leaves only by redrive or skip, and every state is reachable', () => {
    const moves: [string, { from: MessageState; to: readonly MessageState[] }][] =
      Object.entries(TRANSITIONS);
    expect(moves.filter(([, t]) => t.from === 'done' || t.from === 'skipped')).toEqual([]);
    expect(moves.filter(([, t]) => t.from === 'dead').map(([name]) => name)).toEqual([
      'redrive',
      'skip',
    ]);
    const reached = new Set([...ENQUEUED_STATES, ...moves.flatMap(([, t]) => [...t.to])]);
    expect(MESSAGE_STATES.filter((s) => !reached.has(s))).toEqual([]);
  });
});
