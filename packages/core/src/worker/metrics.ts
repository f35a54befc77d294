import type * as PromClient from 'prom-client';
import { DELIVERY_STATES, deliveryCounts } from '../delivery/inspect.ts';
import type { AttemptLog } from '../delivery/sender.ts';
import type { ConnectionUse, Store } from '../driver/backend.ts';
import { MissingPackageError } from '../errors.ts';
import { listenAlone } from '../listen.ts';
import { blockedKeys } from '../queue/blocked.ts';
import { countsByQueue, queueSnapshot } from '../queue/snapshot.ts';
import { MESSAGE_STATES } from '../states.ts';
import { type MetricsRecorder, RELEASE_REASONS } from './metrics-recorder.ts';

let loaded: typeof PromClient | undefined;

/**
 * prom-client, an optional peer dependency: loaded at the first `new WorkerMetrics`, never
 * at import, and named in one sentence when it is not installed.
 */
function promClient(): typeof PromClient {
  if (loaded !== undefined) return loaded;
  try {
    // A literal require: the compiled CLI bundles it, an installed package resolves it.
    loaded = require('prom-client') as typeof PromClient;
  } catch (error) {
    throw new MissingPackageError('prom-client', "the worker's Prometheus metrics", error);
  }
  return loaded;
}

/**
 * The worker's Prometheus metrics (prom-client, a registry of its own: nothing global).
 * Counters and histograms are fed by the worker; the queue gauges are read from the
 * store at each scrape with one snapshot statement ({@link queueSnapshot}) and the count
 * of blocked keys ({@link blockedKeys}, from the partial index of dead messages), so
 * they are the same figures `onceq status` prints, and so are the deliveries per endpoint
 * and state. The messages by queue and state ({@link countsByQueue}) are read from the
 * counters the store keeps per queue (migration 0012), a few rows per queue. Totals only: no per-event or per-key labels (an endpoint is a label:
 * operators name a few).
 */
export class WorkerMetrics implements MetricsRecorder {
  readonly #prom = promClient();
  readonly registry = new this.#prom.Registry();
  readonly #store: Store;
  readonly processed = new this.#prom.Counter({
    name: 'onceq_processed_total',
    help: 'Messages this worker finished, by queue and outcome (lost: the lease was gone at the ACK).',
    labelNames: ['queue', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly extended = new this.#prom.Counter({
    name: 'onceq_lease_extended_total',
    help: 'Lease extensions (heartbeats) that succeeded.',
    registers: [this.registry],
  });
  readonly leaseLost = new this.#prom.Counter({
    name: 'onceq_lease_lost_total',
    help: 'Leases found lost: a refused heartbeat or a refused ACK.',
    registers: [this.registry],
  });
  readonly released = new this.#prom.Counter({
    name: 'onceq_released_total',
    help: 'Messages given back, attempt not spent: claimed but unstarted at a stop (stop), or not recorded for want of a connection (store_unreachable).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly handlerToAck = new this.#prom.Histogram({
    name: 'onceq_handler_to_ack_seconds',
    help: 'From the handler starting to its result being committed (effect + ACK, or failure).',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly queueWait = new this.#prom.Histogram({
    name: 'onceq_queue_wait_seconds',
    help: 'From a message becoming claimable (enqueue, end of backoff, redrive) to its claim, by queue; whole seconds.',
    labelNames: ['queue'] as const,
    buckets: [0, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly #messages = new this.#prom.Gauge({
    name: 'onceq_messages',
    help: 'Stored messages by state (an expired lease counts as leased until recovered).',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly #queueMessages = new this.#prom.Gauge({
    name: 'onceq_queue_messages',
    help: 'Stored messages by queue and state (the counters the store keeps per queue).',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
  });
  readonly #oldestReady = new this.#prom.Gauge({
    name: 'onceq_oldest_ready_age_seconds',
    help: 'How long the oldest claimable message has waited; 0 when none.',
    registers: [this.registry],
  });
  readonly #dlq = new this.#prom.Gauge({
    name: 'onceq_dlq_messages',
    help: 'Dead messages waiting for a human decision.',
    registers: [this.registry],
  });
  readonly #dlqOldest = new this.#prom.Gauge({
    name: 'onceq_dlq_oldest_age_seconds',
    help: 'How long the oldest dead message has been dead; 0 when none.',
    registers: [this.registry],
  });
  readonly #blockedKeys = new this.#prom.Gauge({
    name: 'onceq_blocked_keys',
    help: 'Ordering keys held by a dead head: nothing more of the key is handed out until it is redriven or skipped.',
    registers: [this.registry],
  });

  readonly #deliveries = new this.#prom.Gauge({
    name: 'onceq_deliveries',
    help: 'Webhook deliveries by endpoint and state (pending, leased, delivered, dead).',
    labelNames: ['endpoint', 'state'] as const,
    registers: [this.registry],
  });
  readonly #endpointDisabled = new this.#prom.Gauge({
    name: 'onceq_endpoint_disabled',
    help: 'Endpoints with deliveries: 1 while a 410 Gone keeps the endpoint disabled, else 0.',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });
  readonly deliveryAttempts = new this.#prom.Counter({
    name: 'onceq_delivery_attempts_total',
    help: 'Delivery attempts this process recorded, by endpoint and outcome (delivered, retry, dead, gone).',
    labelNames: ['endpoint', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly deliveryAttemptSeconds = new this.#prom.Histogram({
    name: 'onceq_delivery_attempt_seconds',
    help: "From a delivery attempt's request to its answer (or its failure), by endpoint.",
    labelNames: ['endpoint'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 30],
    registers: [this.registry],
  });

  /** Counts one recorded delivery attempt (the sender's `onAttempt`). */
  recordAttempt(attempt: AttemptLog): void {
    this.deliveryAttempts.inc({ endpoint: attempt.endpoint, outcome: attempt.outcome });
    this.deliveryAttemptSeconds.observe({ endpoint: attempt.endpoint }, attempt.latencyMs / 1000);
  }

  #notificationsLive: (() => boolean) | undefined;
  readonly #notifications = new this.#prom.Gauge({
    name: 'onceq_notifications_live',
    help: 'PostgreSQL: 1 while LISTEN notifications arrive, 0 while the worker polls (SQLite, a lost LISTEN connection, or none heard).',
    registers: [this.registry],
    collect: () => {
      if (this.#notificationsLive !== undefined) {
        this.#notifications.set(this.#notificationsLive() ? 1 : 0);
      }
    },
  });

  #connectionUse: (() => ConnectionUse) | undefined;
  readonly #connectionsOpen = new this.#prom.Gauge({
    name: 'onceq_connections_open',
    help: 'PostgreSQL: connections the worker holds now (its pool, LISTEN included).',
    registers: [this.registry],
    collect: () => {
      const use = this.#connectionUse?.();
      if (use !== undefined) this.#connectionsOpen.set(use.held);
    },
  });
  readonly #connectionsRefused = new this.#prom.Counter({
    name: 'onceq_connections_refused_total',
    help: 'PostgreSQL: connections the server refused the worker (max_connections reached, or unreachable); it works on with those it holds.',
    registers: [this.registry],
    collect: () => {
      const use = this.#connectionUse?.();
      if (use !== undefined) {
        this.#connectionsRefused.reset();
        this.#connectionsRefused.inc(use.refused);
      }
    },
  });

  /** Reports the store's connections on every scrape. */
  watchConnections(use: () => ConnectionUse): void {
    this.#connectionUse = use;
  }

  /** Reports `live()` as `onceq_notifications_live` on every scrape. */
  watchNotifications(live: () => boolean): void {
    this.#notificationsLive = live;
  }

  constructor(store: Store) {
    this.#store = store;
    for (const reason of RELEASE_REASONS) this.released.inc({ reason }, 0);
  }

  /** The text exposition: reads the queue gauges from the store (three reads), then renders. */
  async render(): Promise<string> {
    // One after the other: a scrape never takes a second pooled connection from the worker.
    const snap = await queueSnapshot(this.#store);
    const blocked = await blockedKeys(this.#store, { limit: 0 });
    const byQueue = await countsByQueue(this.#store);
    for (const state of MESSAGE_STATES)
      this.#messages.set({ state }, snap.report.messages[state] ?? 0);
    // Reset first: a queue whose messages were all pruned away drops out.
    this.#queueMessages.reset();
    for (const [queue, counts] of Object.entries(byQueue)) {
      for (const state of MESSAGE_STATES)
        this.#queueMessages.set({ queue, state }, counts[state] ?? 0);
    }
    this.#oldestReady.set(snap.oldestReadyAt === null ? 0 : snap.now - snap.oldestReadyAt);
    this.#dlq.set(snap.report.messages.dead);
    this.#dlqOldest.set(snap.oldestDeadAt === null ? 0 : snap.now - snap.oldestDeadAt);
    this.#deliveries.reset();
    this.#endpointDisabled.reset();
    for (const counts of await deliveryCounts(this.#store)) {
      for (const state of DELIVERY_STATES) {
        this.#deliveries.set({ endpoint: counts.endpoint, state }, counts.states[state]);
      }
      this.#endpointDisabled.set({ endpoint: counts.endpoint }, counts.disabled === null ? 0 : 1);
    }
    this.#blockedKeys.set(blocked.count);
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

export interface MetricsServer {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Serves `/metrics` (Prometheus text format) and `/healthz` on 127.0.0.1 only.
 * `/healthz` is 200 `ok` while `healthy()` says so (the worker is running and its last
 * store round trip worked), else 503 with the reason. Port 0 picks a free port.
 *
 * @throws ListenRefusedError when another process holds the port (never shared).
 */
export function serveMetrics(
  port: number,
  metrics: WorkerMetrics,
  healthy: () => string | true,
): MetricsServer {
  const server = listenAlone(
    {
      hostname: '127.0.0.1',
      port,
      // Never Bun's development page (working directory, source lines) nor its multi-line
      // dump on stderr: a request that cannot be read is a plain 400.
      development: false,
      error: () => new Response('internal error\n', { status: 500 }),
      async fetch(request) {
        let path: string;
        try {
          path = new URL(request.url).pathname;
        } catch {
          return new Response('malformed request: it names no valid Host\n', { status: 400 });
        }
        if (path === '/metrics') {
          try {
            return new Response(await metrics.render(), {
              headers: { 'content-type': metrics.contentType },
            });
          } catch (error) {
            const why = error instanceof Error ? error.message : String(error);
            return new Response(`store unavailable: ${why}\n`, { status: 503 });
          }
        }
        if (path === '/healthz') {
          const health = healthy();
          return health === true
            ? new Response('ok\n')
            : new Response(`${health}\n`, { status: 503 });
        }
        return new Response('not found: try /metrics or /healthz\n', { status: 404 });
      },
    },
    '--metrics-port',
  );
  return {
    port: server.port ?? port,
    stop: async () => {
      await server.stop(true);
    },
  };
}
