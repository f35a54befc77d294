/**
 * The states of a message and who moves it out of each.
 *
 * - `ready`   → `leased` by {@link claim}.
 * - `leased`  → `done` by {@link apply}; → `ready`/`dead` by {@link fail} or by lazy
 *   recovery inside the next claim once `lease_until <= now`.
 * - `done`    → terminal; the row stays forever so that a repeated event is a duplicate.
 * - `dead`    → `ready` by {@link redrive}, or `skipped` by {@link skip}.
 * - `waiting` → `ready` (only messages with an ordering key): held behind the unfinished
 *   message of its key enqueued before it, and made ready in the transaction that
 *   finishes that one (`done` or `skipped`). docs/ordering.md.
 * - `skipped` → terminal: a dead message put aside on purpose, releasing its key.
 */
export const MESSAGE_STATES = ['ready', 'leased', 'done', 'dead', 'waiting', 'skipped'] as const;
export type MessageState = (typeof MESSAGE_STATES)[number];

/**
 * The states every store reports, keyed or not: the lesson's four. `waiting` and
 * `skipped` appear in a status report once some message has been in them.
 */
export const LESSON_STATES = ['ready', 'leased', 'done', 'dead'] as const;

/** The states a status report holds (see `StateCounts`), in {@link MESSAGE_STATES} order. */
export function reportedStates(counts: Partial<Record<MessageState, number>>): MessageState[] {
  return MESSAGE_STATES.filter((state) => counts[state] !== undefined);
}

export function isMessageState(value: unknown): value is MessageState {
  return typeof value === 'string' && (MESSAGE_STATES as readonly string[]).includes(value);
}

/** How a handler's failure is treated: `temporary` is retried with backoff, `permanent` goes straight to `dead`. */
export const FAILURE_KINDS = ['temporary', 'permanent'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];
