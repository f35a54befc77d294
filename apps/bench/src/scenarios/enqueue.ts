/**
 * Enqueue throughput: max-size batches (1000 JSONL lines, given as bytes like a file),
 * validation included (`enqueue` parses and validates the batch itself), into a fresh
 * store. Also times `parseBatch` alone, to split validation from the write.
 */
import { enqueue, openStore, parseBatch } from '@onceq/core';
import { batches } from '../util.ts';
import type { StoreFactory } from './processing.ts';

export interface EnqueueRun {
  /** Lines accepted per second over all batches of the run (parse + validate + write). */
  rate: number;
  /** Median time of one 1000-line batch, ms. */
  batchMs: number;
  /** `parseBatch` alone, lines per second. */
  parseRate: number;
  accepted: number;
}

export async function runEnqueue(
  target:
    | { kind: 'sqlite'; path: string; synchronous: 'FULL' | 'NORMAL' }
    | { kind: 'pg'; factory: StoreFactory },
  messages: number,
): Promise<EnqueueRun> {
  const input = batches(messages);
  const parseStart = performance.now();
  for (const batch of input) parseBatch(batch);
  const parseMs = performance.now() - parseStart;

  let dispose = async () => {};
  let store: Awaited<ReturnType<typeof openStore>>;
  if (target.kind === 'sqlite') {
    store = await openStore(target.path, { synchronous: target.synchronous });
  } else {
    const { target: url, schema } = await target.factory.prepare(0);
    store = await openStore(url, { schema: schema as string });
    dispose = () => target.factory.dispose(url, schema);
  }
  const times: number[] = [];
  let accepted = 0;
  try {
    for (const batch of input) {
      const t0 = performance.now();
      const result = await enqueue(store, batch);
      times.push(performance.now() - t0);
      accepted += result.accepted;
    }
  } finally {
    await store.close();
    await dispose();
  }
  const total = times.reduce((a, b) => a + b, 0);
  const sorted = [...times].sort((a, b) => a - b);
  return {
    rate: (messages / total) * 1000,
    batchMs: sorted[sorted.length >> 1] as number,
    parseRate: (messages / parseMs) * 1000,
    accepted,
  };
}
