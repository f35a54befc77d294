import { resolveEndpoint } from '@onceq/core/internal';
import { type MetricsServer, serveMetrics, WorkerMetrics } from '@onceq/core/metrics';
import {
  type AttemptLog,
  type DeliveryEndpoint,
  EndpointConfigError,
  sendDeliveries,
} from '@onceq/core/webhooks';
import { boolFlag, expectPositionals, intFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { configuredEndpoints } from '../endpoints.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

interface DeliverArgs {
  endpoints: DeliveryEndpoint[];
  untilIdle: boolean;
  leaseSeconds: number | undefined;
  metricsPort: number | undefined;
}

export const deliverCommand = defineCommand<DeliverArgs>({
  name: 'deliver',
  summary: "send the outbox's webhooks to the endpoints of onceq.config.json until SIGTERM/SIGINT",
  flags: {
    'until-idle': {
      type: 'boolean',
      help: 'stop once nothing is due now (retries scheduled later wait for the next run)',
    },
    lease: {
      type: 'string',
      value: 'S',
      help: "how long a lease lasts, in seconds; must outlast the endpoint's timeout (default: twice the timeout plus 10)",
    },
    'metrics-port': {
      type: 'string',
      value: 'P',
      help: 'serve /metrics (Prometheus: deliveries and attempts per endpoint) and /healthz on 127.0.0.1:P',
    },
  },
  notes: [
    [
      'endpoints',
      'onceq.config.json\'s "endpoints": url, secret_env, timeout_seconds, retry_schedule, concurrency',
    ],
    [
      'log',
      'one line per attempt on stderr (with --json, one JSON object per line); no body, header or secret',
    ],
  ],
  examples: ['deliver', 'deliver --until-idle --json'],
  opensStore: true,
  parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'deliver');
    // Checked before the store is opened: a missing or bad secret creates nothing.
    const endpoints = configuredEndpoints(config(), ctx.env);
    const leaseSeconds = intFlag(values, 'lease', { min: 1, max: 86_400 });
    for (const endpoint of endpoints) {
      try {
        const { timeoutMs } = resolveEndpoint(endpoint);
        if (leaseSeconds !== undefined && leaseSeconds * 1000 <= timeoutMs) {
          throw new UsageError(
            `--lease ${leaseSeconds} does not outlast endpoint ${endpoint.name}'s timeout of ${timeoutMs} ms`,
          );
        }
      } catch (error) {
        if (error instanceof EndpointConfigError) throw new UsageError(error.message);
        throw error;
      }
    }
    return {
      endpoints,
      untilIdle: boolFlag(values, 'until-idle') === true,
      leaseSeconds,
      metricsPort: intFlag(values, 'metrics-port', { min: 0, max: 65_535 }),
    };
  },
  async run(args, { store, json, ctx }) {
    const { endpoints } = args;
    // The handlers go in before anything is sent: a stop signal ends the loop gracefully
    // (attempts in flight finish and are recorded), never half-way through a record.
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const metrics = args.metricsPort === undefined ? undefined : new WorkerMetrics(store);
    let server: MetricsServer | undefined;
    if (metrics !== undefined && args.metricsPort !== undefined) {
      server = serveMetrics(args.metricsPort, metrics, () => true);
      ctx.err(`serving /metrics and /healthz on http://127.0.0.1:${server.port}`);
    }
    const log = (a: AttemptLog) => {
      metrics?.recordAttempt(a);
      ctx.err(
        json
          ? toJson({
              webhook_id: a.webhookId,
              endpoint: a.endpoint,
              attempt: a.attempt,
              status: a.status,
              latency_ms: a.latencyMs,
              outcome: a.outcome,
              error: a.error,
            })
          : `${a.webhookId} to ${a.endpoint}: attempt ${a.attempt}, ${a.status ?? 'no answer'} in ${a.latencyMs} ms, ${a.outcome}${a.error === null ? '' : ` (${a.error})`}`,
      );
    };
    try {
      const summary = await sendDeliveries(store, {
        endpoints,
        signal: stop.signal,
        untilIdle: args.untilIdle,
        ...(args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds }),
        onAttempt: log,
        onError: (error) =>
          ctx.err(
            `could not record attempts (they will be sent again): ${(error as Error).message}`,
          ),
      });
      if (json) ctx.out(toJson(summary));
      else {
        ctx.out(
          `delivered ${summary.delivered}, retried ${summary.retried}, dead ${summary.dead}, endpoints disabled by 410 ${summary.disabled}`,
        );
      }
      return 0;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await server?.stop();
    }
  },
});
