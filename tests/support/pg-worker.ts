/**
 * A worker process for the PostgreSQL-only tests (tests/postgres/only.test.ts).
 *
 *   bun tests/support/pg-worker.ts <url> <schema> <mode> <now>
 *
 * Modes:
 * - `work`: opens the store, prints `{"ready":true}`, waits for a line on stdin (the
 *   start signal, so two workers begin together), runs the worker loop with handler v1
 *   and prints its summary as one JSON line: `{"claimed":…,"done":…,…}`.
 * - `work-together`: `work` in batches of 50 that prints `{"handling":true}` at its
 *   first message and waits for a second line before handling it, so the parent can
 *   see two workers each holding a batch before either goes on.
 * - `claim-and-hang`: claims one message (the claim transaction commits), prints the
 *   lease as one JSON line, then waits forever: the parent kills it with SIGKILL before
 *   any apply.
 *
 * `now` is the model clock in Unix seconds: the children share the parent's model time.
 */
import { claim, type Handler, openStore, work } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';

const [url, schema, mode, nowText] = process.argv.slice(2);
if (url === undefined || schema === undefined || mode === undefined || nowText === undefined) {
  console.error('usage: pg-worker.ts <url> <schema> work|work-together|claim-and-hang <now>');
  process.exit(2);
}
const now = Number(nowText);
const store = await openStore(url, { schema, clock: modelClock(now) });

if (mode === 'work' || mode === 'work-together') {
  console.log(JSON.stringify({ ready: true }));
  await waitForLine();
  let handler: Handler = handlers.v1;
  if (mode === 'work-together') {
    // The first message is held until the parent has seen every worker holding one.
    let first = true;
    handler = async (payload, context) => {
      if (first) {
        first = false;
        console.log(JSON.stringify({ handling: true }));
        await waitForLine();
      }
      return handlers.v1(payload, context);
    };
  }
  const summary = await work(store, handler, mode === 'work-together' ? { batch: 50 } : {});
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
