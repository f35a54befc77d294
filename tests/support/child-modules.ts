/**
 * A child process for tests/project/package-boundaries.test.ts: loads core's and the handler
 * package's public entries (the handler reaches core as `@onceq/core`), runs the whole SQLite cycle
 * (open, enqueue, work, status) on the store at argv[2], and prints which PostgreSQL
 * driver modules the process has loaded, as JSON. With argv[3] = `control` it then loads
 * the PostgreSQL backend too, so the test can show the check sees the driver when it is
 * there.
 */
import { enqueue, openStore, status, work } from '@onceq/core';
import { handlers } from '@onceq/handler';

const [path, mode] = process.argv.slice(2);
if (path === undefined) throw new Error('usage: child-modules.ts STORE [control]');

/** Loaded modules of the `pg` driver and its parts (Bun's registry, ESM included). */
function driverModules(): string[] {
  return Object.keys(require.cache).filter((file) =>
    /[\\/]node_modules[\\/](pg|pg-pool|pg-protocol|pg-types)[\\/]/.test(file),
  );
}

const store = await openStore(path);
await enqueue(store, '{"event_id":"E0001","payload":{"category":"book","amount_cents":100}}\n');
await work(store, handlers.v1);
const done = (await status(store)).messages.done;
await store.close();
if (mode === 'control') await (await import('@onceq/core/internal')).loadPostgresDriver();
console.log(JSON.stringify({ done, driver: driverModules() }));
