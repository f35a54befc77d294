/**
 * The four states of a message and who moves it out of each.
 *
 * - `ready`  → `leased` by {@link claim}.
 * - `leased` → `done` by {@link apply}; → `ready`/`dead` by {@link fail} or by lazy
 *   recovery inside the next claim once `lease_until <= now`.
 * - `done`   → terminal; the row stays forever so that a repeated event is a duplicate.
 * - `dead`   → `ready` only by {@link redrive}.
 */
export const MESSAGE_STATES = ['ready', 'leased', 'done', 'dead'] as const;
export type MessageState = (typeof MESSAGE_STATES)[number];

export function isMessageState(value: unknown): value is MessageState {
  return typeof value === 'string' && (MESSAGE_STATES as readonly string[]).includes(value);
}

/** How a handler's failure is treated: `temporary` is retried with backoff, `permanent` goes straight to `dead`. */
export const FAILURE_KINDS = ['temporary', 'permanent'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];
