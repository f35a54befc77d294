import type { Handler, PolicyOptions, WorkerQueueOptions } from '@onceq/core';
import type { OnceqConfig } from './config.ts';
import { CONFIG_FILE, describeHandler, type HandlerSource, resolveHandlerSpec } from './config.ts';
import type { FlagSpec } from './flags.ts';
import { loadHandlerModule } from './handler-module.ts';
import type { QueuePlan } from './policy.ts';

/**
 * The handler a command runs: a built-in version (`v1`, `v2`) or your own module
 * (`--handler ./my-handler.ts`, or `"handler"` in onceq.config.json); either runs outside
 * any transaction and its result is recorded with a fenced ACK. Also where the choice
 * came from (a handler chosen in setup silently changes results otherwise).
 */
export type HandlerChoice =
  | { kind: 'builtin'; name: string; source: HandlerSource; handler: Handler }
  | {
      kind: 'module';
      name: string;
      /** The path as written (in the flag or the config file). */
      path: string;
      source: 'flag' | 'config';
      handler: Handler;
    };

/**
 * `flag` (named `label` in messages; default `--handler`), or the config's `handler`, or
 * v1, resolved and, for a module, imported. The rules (and zod) are loaded here, only by
 * the commands that run a handler.
 */
export async function chooseHandler(
  flag: string | undefined,
  config: () => OnceqConfig,
  cwd: string,
  label = '--handler',
): Promise<HandlerChoice> {
  const spec = resolveHandlerSpec(flag, config, cwd, label);
  if (spec.kind === 'module') {
    const where = spec.source === 'flag' ? label : `"handler" in ${CONFIG_FILE}:`;
    const loaded = await loadHandlerModule(spec.spec, spec.base, where);
    return {
      kind: 'module',
      name: loaded.version,
      path: spec.spec,
      source: spec.source,
      handler: loaded.handle,
    };
  }
  const { handlers } = await import('@onceq/handler');
  return {
    kind: 'builtin',
    name: spec.version,
    source: spec.source,
    handler: handlers[spec.version],
  };
}

/** `handler v2 (from onceq.config.json)`, `handler tips-1 (from ./tips.ts)`. */
export function describeChoice(choice: HandlerChoice): string {
  if (choice.kind === 'builtin') return describeHandler(choice.name, choice.source);
  const inConfig = choice.source === 'config' ? ` in ${CONFIG_FILE}` : '';
  return `handler ${choice.name} (from ${choice.path}${inConfig})`;
}

/** Where the choice came from, for `--json` output. */
export function choiceSource(choice: HandlerChoice): string {
  return choice.kind === 'module' ? choice.path : choice.source;
}

/** The `--handler` flag of the commands that run a handler. */
export const HANDLER_FLAG = {
  type: 'string',
  value: 'v1|v2|./file.ts',
  help: 'handler version, or your own module (default: config "handler", then v1)',
} as const satisfies FlagSpec;

/** One queue of a `work` or `worker` as it runs: its handler, chosen, and its policy. */
export interface QueueRun {
  queue: string;
  choice: HandlerChoice;
  policy: PolicyOptions;
}

/**
 * The handler of each planned queue, chosen ({@link chooseHandler}); queues naming the
 * same handler share one load of it.
 */
export async function chooseQueueHandlers(
  plans: readonly QueuePlan[],
  config: () => OnceqConfig,
  cwd: string,
): Promise<QueueRun[]> {
  const loaded = new Map<string, Promise<HandlerChoice>>();
  const runs: QueueRun[] = [];
  for (const { queue, handler, policy } of plans) {
    const key = `${handler.label}\n${handler.flag ?? ''}`;
    let choice = loaded.get(key);
    if (choice === undefined) {
      // A queue's own entry of the config file is given to chooseHandler as a flag (so
      // its label names that entry), but it comes from the config file.
      choice = chooseHandler(handler.flag, config, cwd, handler.label).then((c) =>
        handler.ofQueue ? { ...c, source: 'config' } : c,
      );
      loaded.set(key, choice);
    }
    runs.push({ queue, choice: await choice, policy });
  }
  return runs;
}

/**
 * The Worker's handler and queues for `runs`: the first queue's handler as the worker's,
 * and each queue with its own handler and policy.
 */
export function workerQueues(runs: readonly QueueRun[]): {
  handler: Handler;
  queues: Record<string, WorkerQueueOptions>;
} {
  const queues: Record<string, WorkerQueueOptions> = {};
  for (const { queue, choice, policy } of runs) {
    queues[queue] = { ...policy, handler: choice.handler };
  }
  return { handler: (runs[0] as QueueRun).choice.handler, queues };
}

/** The handler's name when every queue runs the same one, else null. */
export function sharedHandler(runs: readonly QueueRun[]): HandlerChoice | null {
  const [first] = runs;
  if (first === undefined) return null;
  return runs.every((r) => r.choice.handler === first.choice.handler) ? first.choice : null;
}

/** `handler v2 (from …)`, or, when the queues run different handlers, one per queue. */
export function describeChoices(runs: readonly QueueRun[]): string {
  const shared = sharedHandler(runs);
  if (shared !== null) return describeChoice(shared);
  return runs.map((r) => `queue ${r.queue}: ${describeChoice(r.choice)}`).join('; ');
}

/** `v2`, or `payments: outage-test, refunds: v2` when the queues run different handlers. */
export function handlerNames(runs: readonly QueueRun[]): string {
  const shared = sharedHandler(runs);
  if (shared !== null) return shared.name;
  return runs.map((r) => `${r.queue}: ${r.choice.name}`).join(', ');
}

/**
 * The handler fields of a `--json` summary: `handler` (and `handler_source`) when every
 * queue runs the same one, else `handlers` (and `handler_sources`) by queue.
 */
export function handlerJson(runs: readonly QueueRun[]) {
  const shared = sharedHandler(runs);
  if (shared !== null) return { handler: shared.name, handler_source: choiceSource(shared) };
  return {
    handlers: Object.fromEntries(runs.map((r) => [r.queue, r.choice.name])),
    handler_sources: Object.fromEntries(runs.map((r) => [r.queue, choiceSource(r.choice)])),
  };
}
