/**
 * The library in a few lines (the README's "Using the library" snippet, runnable):
 *
 *   bun examples/library.ts [store]      (default ./onceq.db; or a postgres:// URL)
 *
 * Enqueues the demo events, processes them with handler v1 and prints the status.
 * The imports resolve through the `examples` workspace (examples/package.json).
 */
import { enqueue, openStore, status, work } from '@onceq/core';
import { handlers } from '@onceq/handler';

const store = await openStore(process.argv[2] ?? './onceq.db');
await enqueue(store, await Bun.file(new URL('./demo.jsonl', import.meta.url)).bytes());
await work(store, handlers.v1, { batch: 100 });
console.log(JSON.stringify(await status(store)));
await store.close();
