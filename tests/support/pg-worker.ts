/**
 * A worker process for the PostgreSQL-only tests (tests/postgres/only.test.ts).
 *
 *   bun tests/support/pg-worker.ts <url> <schema> <mode> <now>
 *
 * Modes:
 * - `work`: opens the store, prints `{"ready":true}`, waits for a line on stdin (the
 *   start signal, so two workers begin together), runs the worker loop with handler v1
 *   and prints its summary as one JSON line: `{"claimed":…,"done":…,…}`.
 * - `claim-and-hang`: claims one message (the claim transaction commits), prints the
 *   lease as one JSON line, then waits forever: the parent kills it with SIGKILL before
 *   any apply.
 *
 * `now` is the model clock in Unix seconds: the children share the parent's model time.
 */
import { claim, openStore, work } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';

const [url, schema, mode, nowText] = process.argv.slice(2);
if (url === undefined || schema === undefined || mode === undefined || nowText === undefined) {
  console.error('usage: pg-worker.ts <url> <schema> work|claim-and-hang <now>');
  process.exit(2);
}
const now = Number(nowText);
const store = await openStore(url, { schema, clock: modelClock(now) });

if (mode === 'work') {
  console.log(JSON.stringify({ ready: true }));
  await waitForLine();
  const summary = await work(store, handlers.v1);
  await store.close();
  console.log(JSON.stringify(summary));
} else if (mode === 'claim-and-hang') {
  const lease = await claim(store);
  console.log(JSON.stringify(lease));
  // Never applies: the parent kills this process while it holds a committed lease.
  setInterval(() => {}, 1 << 30);
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}

async function waitForLine(): Promise<void> {
  const reader = Bun.stdin.stream().getReader();
  const decoder = new TextDecoder();
  let seen = '';
  while (!seen.includes('\n')) {
    const { value, done } = await reader.read();
    if (done) return;
    seen += decoder.decode(value);
  }
  reader.releaseLock();
}
