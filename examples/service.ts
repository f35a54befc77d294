/**
 * onceq as a service from the library: a Worker with async handlers, Prometheus
 * metrics on 127.0.0.1, and the same two-stage shutdown as `onceq worker`.
 *
 *   bun examples/service.ts [store] [metrics port]
 *
 * Stop it with Ctrl-C (graceful) and Ctrl-C again (at once).
 */
import { openStore, Worker } from '@onceq/core';
import { serveMetrics, WorkerMetrics } from '@onceq/core/metrics';
import { createLog, stopOnSignals } from '@onceq/core/service';
import { handle } from './handler/tips.ts';

const store = await openStore(process.argv[2] ?? './onceq.db');
const log = createLog('human');
const metrics = new WorkerMetrics(store);
const worker = new Worker(store, handle, { concurrency: 8, leaseSeconds: 30, log, metrics });
const server = serveMetrics(Number(process.argv[3] ?? 9464), metrics, () => worker.health());
await worker.start();
log.write('metrics', `http://127.0.0.1:${server.port}/metrics`);
const result = await stopOnSignals(worker, { timeoutMs: 30_000, log });
console.log(JSON.stringify(result));
await server.stop();
await store.close();
process.exit(result.graceful ? 0 : 1);
