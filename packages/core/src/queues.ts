/**
 * Named queues (docs/worker.md, "Queues"): every message belongs to one, `default` unless
 * named; workers claim from the queues they are given, and ordering keys are scoped to a
 * queue. An event id stays unique in the whole store, whatever its queue.
 */

/** The queue of a message enqueued without one, and of a worker given none. */
export const DEFAULT_QUEUE = 'default';

/** A queue's name: 1 to 64 letters, digits, `_`, `-` or `.`, starting with a letter or digit. */
export const QUEUE_NAME_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** {@link QUEUE_NAME_PATTERN} in words, for messages. */
export const QUEUE_NAME_RULE =
  '1 to 64 letters, digits, "_", "-" or "." starting with a letter or digit';

/** True when `name` is a valid queue name. */
export function isQueueName(name: unknown): name is string {
  return typeof name === 'string' && QUEUE_NAME_PATTERN.test(name);
}

/**
 * The name an ordering key's lock is taken on: `queue/key` (a queue name has no `/`),
 * as PostgreSQL's release of a key's next message takes it (migration 0013).
 */
export function keyLockName(queue: string, key: string): string {
  return `${queue}/${key}`;
}
