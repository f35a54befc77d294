import type { PruneSchedule, StopResult, WorkerSummary } from '@onceq/core';
import { Worker } from '@onceq/core';
import { checkDedupWindow, DEFAULT_BATCH } from '@onceq/core/internal';
import { type MetricsServer, serveMetrics, WorkerMetrics } from '@onceq/core/metrics';
import { createLog, LOG_FORMATS, type LogFormat, stopOnSignals } from '@onceq/core/service';
import { expectPositionals, type FlagValues, intFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { parseDuration } from '../duration.ts';
import { UsageError } from '../errors.ts';
import type { FlagSpec } from '../flags.ts';
import {
  chooseQueueHandlers,
  describeChoices,
  HANDLER_FLAG,
  handlerJson,
  handlerNames,
  type QueueRun,
  workerQueues,
} from '../handler-choice.ts';
import { plural, toJson } from '../output.ts';
import { POLICY_FLAGS, QUEUE_FLAG, queuesFlag, queuesPlan } from '../policy.ts';

/** Default `--shutdown-timeout`, seconds. */
export const DEFAULT_SHUTDOWN_TIMEOUT = 30;

/** `--concurrency`, shared by `worker` and `work`. */
export const CONCURRENCY_FLAG = {
  type: 'string',
  value: 'N',
  help: 'handlers running at once, for async handlers (default 1)',
} as const satisfies FlagSpec;

/** `--handler-timeout`, shared by `worker` and `work`. */
export const HANDLER_TIMEOUT_FLAG = {
  type: 'string',
  value: 'S',
  help: "a handler's deadline in seconds: past it its signal is aborted and the message retried (handler_timeout); default none",
} as const satisfies FlagSpec;

/** The worker option for `--handler-timeout` seconds (none when not given). */
export function handlerTimeoutMs(seconds: number | undefined): { handlerTimeoutMs?: number } {
  return seconds === undefined ? {} : { handlerTimeoutMs: seconds * 1000 };
}

interface WorkerArgs {
  /** Each queue's handler and policy. */
  queues: QueueRun[];
  batch: number | undefined;
  concurrency: number;
  handlerTimeout: number | undefined;
  shutdownTimeout: number;
  metricsPort: number | undefined;
  logFormat: LogFormat;
  prune: PruneSchedule | undefined;
}

export const workerCommand = defineCommand<WorkerArgs>({
  name: 'worker',
  summary: 'run as a service: claim and process until SIGTERM/SIGINT (graceful, then forced)',
  flags: {
    handler: HANDLER_FLAG,
    queue: QUEUE_FLAG,
    batch: { type: 'string', value: 'N', help: `messages per claim (default ${DEFAULT_BATCH})` },
    ...POLICY_FLAGS,
    concurrency: CONCURRENCY_FLAG,
    'handler-timeout': HANDLER_TIMEOUT_FLAG,
    'shutdown-timeout': {
      type: 'string',
      value: 'S',
      help: `after the first SIGTERM/SIGINT, how long running handlers may finish (default ${DEFAULT_SHUTDOWN_TIMEOUT})`,
    },
    'metrics-port': {
      type: 'string',
      value: 'P',
      help: 'serve /metrics (Prometheus) and /healthz on 127.0.0.1:P; a port another process holds is refused',
    },
    'log-format': {
      type: 'string',
      value: 'human|json',
      help: 'human (default) or json: one line per batch and per event, on stderr',
    },
    'prune-every': {
      type: 'string',
      value: 'age',
      help: 'prune in the background at start and then this often (e.g. 1h), paced so claims go on',
    },
    'done-older-than': {
      type: 'string',
      value: 'age',
      help: 'with --prune-every: done messages finished longer ago (default 30d, or none if only --dead-older-than)',
    },
    'forget-older-than': {
      type: 'string',
      value: 'age',
      help: 'with --prune-every: the dedup window, forget tombstones of messages finished longer ago (at least 3d)',
    },
    'dead-older-than': {
      type: 'string',
      value: 'age',
      help: 'with --prune-every: dead messages (default 90d, or none if only --done-older-than)',
    },
  },
  examples: ['worker --handler ./my-handler.ts --concurrency 8 --metrics-port 9464'],
  opensStore: true,
  waitForConnection(args, message, ctx) {
    createLog(args.logFormat, (line) => ctx.err(line)).write('connection_wait', message);
  },
  async parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'worker');
    const plans = queuesPlan(queuesFlag(values), values, config);
    const logFormat = stringFlag(values, 'log-format') ?? 'human';
    if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) {
      throw new UsageError(`--log-format must be human or json, got ${JSON.stringify(logFormat)}`);
    }
    return {
      batch: intFlag(values, 'batch', { min: 1 }),
      concurrency: intFlag(values, 'concurrency', { min: 1, max: 1000 }) ?? 1,
      handlerTimeout: intFlag(values, 'handler-timeout', { min: 1, max: 86_400 }),
      shutdownTimeout:
        intFlag(values, 'shutdown-timeout', { min: 0, max: 86_400 }) ?? DEFAULT_SHUTDOWN_TIMEOUT,
      metricsPort: intFlag(values, 'metrics-port', { min: 0, max: 65_535 }),
      logFormat: logFormat as LogFormat,
      prune: pruneSchedule(values),
      queues: await chooseQueueHandlers(plans, config, ctx.cwd),
    };
  },
  async run(args, { store, json, ctx }) {
    const log = createLog(args.logFormat, (line) => ctx.err(line));
    const metrics = new WorkerMetrics(store);
    const { handler, queues } = workerQueues(args.queues);
    const worker = new Worker(store, handler, {
      ...(args.batch === undefined ? {} : { batch: args.batch }),
      queues,
      concurrency: args.concurrency,
      ...handlerTimeoutMs(args.handlerTimeout),
      log,
      metrics,
      ...(args.prune === undefined ? {} : { prune: args.prune }),
    });
    let server: MetricsServer | undefined;
    if (args.metricsPort !== undefined) {
      server = serveMetrics(args.metricsPort, metrics, () => worker.health());
    }
    const stopped = stopOnSignals(worker, { timeoutMs: args.shutdownTimeout * 1000, log });
    await worker.start();
    if (server !== undefined) {
      log.write('metrics', `serving /metrics and /healthz on http://127.0.0.1:${server.port}`, {
        port: server.port,
      });
    }
    // Which handler, and where the choice came from: a config's handler silently changes
    // results otherwise (`handler v2 (from onceq.config.json)`, like `work`).
    const names = handlerNames(args.queues);
    log.write('handler', describeChoices(args.queues), { handler: names });
    const result = await stopped;
    const line = summaryLine(names, result);
    ctx.out(json ? toJson(summaryJson(args.queues, result)) : line);
    if (!result.graceful) {
      // Exit at once: abandoned leases expire and are recovered as silent deaths.
      process.exit(1);
    }
    await server?.stop();
    return 0;
  },
});

/** `--prune-every` and its ages; an age without `--prune-every` is a usage error. */
function pruneSchedule(values: FlagValues): PruneSchedule | undefined {
  const every = stringFlag(values, 'prune-every');
  const done = stringFlag(values, 'done-older-than');
  const dead = stringFlag(values, 'dead-older-than');
  const forget = stringFlag(values, 'forget-older-than');
  if (every === undefined) {
    const given = done !== undefined ? 'done' : dead !== undefined ? 'dead' : forget && 'forget';
    if (given)
      throw new UsageError(`--${given}-older-than needs --prune-every (or use onceq prune)`);
    return undefined;
  }
  const everySeconds = parseDuration(every, '--prune-every');
  if (everySeconds < 1) throw new UsageError('--prune-every must be at least 1s');
  return {
    everySeconds,
    ...(done === undefined
      ? {}
      : { doneOlderThanSeconds: parseDuration(done, '--done-older-than') }),
    ...(dead === undefined
      ? {}
      : { deadOlderThanSeconds: parseDuration(dead, '--dead-older-than') }),
    ...(forget === undefined ? {} : { forgetOlderThanSeconds: forgetWindow(forget) }),
  };
}

/** `--forget-older-than` for the worker: the 3-day floor holds (`onceq prune --force` goes below it). */
function forgetWindow(raw: string): number {
  const seconds = parseDuration(raw, '--forget-older-than');
  checkDedupWindow(seconds, false, raw);
  return seconds;
}

function describe(s: WorkerSummary): string {
  const parts = [`${s.done} done`, `${s.retried} retried`, `${s.dead} dead`, `${s.lost} lost`];
  parts.push(`${s.released} released`, `${plural(s.extended, 'lease extension')}`);
  return `claimed ${plural(s.claimed, 'message')}: ${parts.join(', ')}`;
}

export function summaryLine(handler: string, result: StopResult): string {
  return result.graceful
    ? `worker stopped gracefully (handler ${handler}): ${describe(result.summary)}`
    : `worker stopped at once (handler ${handler}), ${plural(result.abandoned, 'message')} abandoned to lease expiry: ${describe(result.summary)}`;
}

function summaryJson(runs: readonly QueueRun[], result: StopResult) {
  const { handler, handlers } = handlerJson(runs);
  return {
    ...(handler === undefined ? { handlers } : { handler }),
    graceful: result.graceful,
    abandoned: result.abandoned,
    ...result.summary,
  };
}
