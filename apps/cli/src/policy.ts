import type { OnDead, PolicyOptions } from '@onceq/core';
import {
  DEFAULT_QUEUE,
  durationSeconds,
  isQueueName,
  ON_DEAD,
  parseBackoff,
  QUEUE_NAME_RULE,
} from '@onceq/core/internal';
import { type FlagValues, intFlag, stringFlag } from './args.ts';
import { CONFIG_FILE, type OnceqConfig, type QueueConfig } from './config.ts';
import { UsageError } from './errors.ts';
import type { FlagSpecs } from './flags.ts';

/** The most attempts a policy may give one message in a cycle. */
export const MAX_ATTEMPTS = 1000;
/** The longest lease, in seconds: a day (heartbeats renew it while a handler runs). */
export const MAX_LEASE_SECONDS = 86_400;

/** `--attempts`, `--backoff`, `--lease`, `--on-dead`: the policy flags of `work` and `worker`. */
export const POLICY_FLAGS = {
  attempts: {
    type: 'string',
    value: 'N',
    help: 'claims a message gets before it goes dead (default 3)',
  },
  backoff: {
    type: 'string',
    value: 'schedule',
    help: 'delays before retries: 1s,5s,1m (the last repeats) or exp:1s..10m (doubling to a cap, jittered); default 1s,2s',
  },
  lease: {
    type: 'string',
    value: 'duration',
    help: 'lease length, like 30s or 5m (a bare number is seconds; default 30s), renewed every third while a handler runs',
  },
  'on-dead': {
    type: 'string',
    value: 'block|skip',
    help: "a dead message blocks its ordering key (block, default) or lets the key's next message go (skip)",
  },
} as const satisfies FlagSpecs;

/** The policy a value of `onceq.config.json` or a flag gives; `where` names it in messages. */
export interface PolicyText {
  attempts?: number | undefined;
  backoff?: string | undefined;
  lease?: string | undefined;
  onDead?: string | undefined;
}

/** The policy flags as given (unchecked text; {@link checkPolicy} checks them). */
export function policyFlags(values: FlagValues): PolicyText {
  return {
    attempts: intFlag(values, 'attempts', { min: 1, max: MAX_ATTEMPTS }),
    backoff: stringFlag(values, 'backoff'),
    lease: stringFlag(values, 'lease'),
    onDead: stringFlag(values, 'on-dead'),
  };
}

/** What names each part of a policy in a message: the flags, or a config file's keys. */
export interface PolicyNames {
  attempts: string;
  backoff: string;
  lease: string;
  onDead: string;
}

export const FLAG_NAMES: PolicyNames = {
  attempts: '--attempts',
  backoff: '--backoff',
  lease: '--lease',
  onDead: '--on-dead',
};

/**
 * The checked policy of `text`; a bad part is a usage error (exit 2), one sentence
 * naming the flag or config key (`names`) at fault.
 */
export function checkPolicy(text: PolicyText, names: PolicyNames = FLAG_NAMES): PolicyOptions {
  const policy: PolicyOptions = {};
  if (text.attempts !== undefined) {
    if (!Number.isInteger(text.attempts) || text.attempts < 1 || text.attempts > MAX_ATTEMPTS) {
      throw new UsageError(
        `${names.attempts} must be a whole number from 1 to ${MAX_ATTEMPTS}, got ${JSON.stringify(text.attempts)}`,
      );
    }
    policy.attempts = text.attempts;
  }
  if (text.backoff !== undefined) {
    const schedule = parseBackoff(text.backoff);
    if (typeof schedule === 'string') throw new UsageError(`${names.backoff} ${schedule}`);
    policy.backoff = text.backoff;
  }
  if (text.lease !== undefined) policy.leaseSeconds = leaseSeconds(text.lease, names.lease);
  if (text.onDead !== undefined) {
    if (!(ON_DEAD as readonly string[]).includes(text.onDead)) {
      throw new UsageError(
        `${names.onDead} must be block or skip, got ${JSON.stringify(text.onDead)}`,
      );
    }
    policy.onDead = text.onDead as OnDead;
  }
  return policy;
}

/** A lease: a duration (`30s`, `5m`, `1h`) or a bare number of seconds, 1 s to a day. */
function leaseSeconds(raw: string, name: string): number {
  const seconds = durationSeconds(/^[0-9]+$/.test(raw) ? `${raw}s` : raw);
  if (seconds === null || seconds < 1 || seconds > MAX_LEASE_SECONDS) {
    throw new UsageError(
      `${name} must be a duration from 1s to 1d like 30s or 5m (a bare number is seconds), got ${JSON.stringify(raw)}`,
    );
  }
  return seconds;
}

/** Each part of `over` that is set, else `base`'s. */
export function mergePolicy(base: PolicyOptions, over: PolicyOptions): PolicyOptions {
  const merged: PolicyOptions = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return merged;
}

/** The config keys of queue `queue`'s policy, for messages. */
export function configNames(queue: string): PolicyNames {
  const key = (k: string) => `${CONFIG_FILE} "queues.${queue}.${k}"`;
  return {
    attempts: key('attempts'),
    backoff: key('backoff'),
    lease: key('lease'),
    onDead: key('on_dead'),
  };
}

/** The policy text of one queue of the config file. */
export function configPolicyText(queue: QueueConfig): PolicyText {
  return {
    attempts: queue.attempts,
    backoff: queue.backoff,
    lease: queue.lease === undefined ? undefined : String(queue.lease),
    onDead: queue.on_dead,
  };
}

/**
 * The policy a worker of `queue` runs with: each policy flag given, else the config
 * file's `queues.<queue>`, else the store's defaults.
 */
export function queuePolicy(
  values: FlagValues,
  config: () => OnceqConfig,
  queue = 'default',
): PolicyOptions {
  const flags = checkPolicy(policyFlags(values));
  const fromConfig = config().queues?.[queue];
  const base =
    fromConfig === undefined ? {} : checkPolicy(configPolicyText(fromConfig), configNames(queue));
  return mergePolicy(base, flags);
}

/** `--queue`: the queues a `work` or `worker` claims from. */
export const QUEUE_FLAG = {
  type: 'string',
  value: 'NAME[,NAME…]',
  help: 'the queues to claim from, in turn (default: default); each uses its handler and policy from the config\'s "queues"',
} as const satisfies FlagSpecs[string];

/** `--queue a,b` as a list of distinct checked names; `['default']` when not given. */
export function queuesFlag(values: FlagValues): string[] {
  const raw = stringFlag(values, 'queue');
  if (raw === undefined) return [DEFAULT_QUEUE];
  const queues = raw.split(',').map((q) => q.trim());
  const bad = queues.find((q) => !isQueueName(q));
  if (bad !== undefined) {
    throw new UsageError(
      `--queue takes queue names separated by commas, each ${QUEUE_NAME_RULE}; got ${JSON.stringify(bad)}`,
    );
  }
  return [...new Set(queues)];
}

/** One queue of a `work` or `worker`: its handler as given and where from, and its policy. */
export interface QueuePlan {
  queue: string;
  /**
   * The handler as given (a version or a path), what names it in messages, and whether
   * it is the queue's own entry of the config file (`queues.<queue>.handler`).
   */
  handler: { flag: string | undefined; label: string; ofQueue: boolean };
  policy: PolicyOptions;
}

/**
 * The handler and the policy of each of `queues`, one worker running them all: each
 * message is handled by its queue's handler and recorded by its queue's policy. The
 * handler is `--handler` when given (every queue's), else the config's
 * `queues.<queue>.handler`, else the config's `handler`, else v1; each part of the policy
 * is its flag when given (every queue's), else the config's `queues.<queue>` part, else
 * the store's default.
 */
export function queuesPlan(
  queues: readonly string[],
  values: FlagValues,
  config: () => OnceqConfig,
): QueuePlan[] {
  const fromFlag = stringFlag(values, 'handler');
  return queues.map((queue) => {
    const fromQueue = config().queues?.[queue]?.handler;
    const handler =
      fromFlag !== undefined || fromQueue === undefined
        ? { flag: fromFlag, label: '--handler', ofQueue: false }
        : { flag: fromQueue, label: `${CONFIG_FILE} "queues.${queue}.handler"`, ofQueue: true };
    return { queue, handler, policy: queuePolicy(values, config, queue) };
  });
}
