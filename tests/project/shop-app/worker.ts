/**
 * The worker service: `bun worker.ts ./handler-v1.ts` with ONCEQ_DB set; stops on
 * SIGTERM (graceful) like `onceq worker`.
 */
import { type Handler, openStore, Worker } from '@onceq/core';
import { createLog, stopOnSignals } from '@onceq/core/service';

const module = (await import(process.argv[2] ?? './handler-v1.ts')) as { handle: Handler };
const store = await openStore(process.env.ONCEQ_DB ?? './shop.db', {
  idPolicy: { kind: 'general' },
});
const log = createLog('human');
const worker = new Worker(store, module.handle, { concurrency: 4, leaseSeconds: 3, log });
await worker.start();
log.write('started', 'worker');
const result = await stopOnSignals(worker, { timeoutMs: 10_000, log });
await store.close();
process.exit(result.graceful ? 0 : 1);
