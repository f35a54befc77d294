/** Starts worker processes behind a start barrier and collects their results. */
import { join } from 'node:path';
import type { ChildResult } from './worker-child.ts';

const CHILD = join(import.meta.dir, 'worker-child.ts');

/** Reads a byte stream line by line. */
class LineReader {
  readonly #reader: { read(): Promise<{ done: boolean; value?: Uint8Array | undefined }> };
  readonly #decoder = new TextDecoder();
  #buffer = '';
  #ended = false;
  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }
  async next(): Promise<string | null> {
    for (;;) {
      const nl = this.#buffer.indexOf('\n');
      if (nl >= 0) {
        const out = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        return out;
      }
      if (this.#ended) {
        const rest = this.#buffer;
        this.#buffer = '';
        return rest.length > 0 ? rest : null;
      }
      const { value, done } = await this.#reader.read();
      if (done) this.#ended = true;
      else this.#buffer += this.#decoder.decode(value, { stream: true });
    }
  }
}

/**
 * Runs one child per spec (`script`, default worker-child.ts, takes the spec as JSON in
 * argv[2]): waits until every child has opened its store, releases them
 * together (calling `onGo` as it does), and returns their results in spec order. A child
 * that dies without a result is reported as an error result.
 */
export async function runChildren(
  specs: readonly object[],
  script: string = CHILD,
  onGo: () => void = () => {},
): Promise<ChildResult[]> {
  const procs = specs.map((spec) =>
    Bun.spawn(['bun', script, JSON.stringify(spec)], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env },
    }),
  );
  const readers = procs.map((p) => new LineReader(p.stdout));
  const ready = await Promise.all(readers.map((r) => r.next()));
  const allReady = ready.every((l) => l === 'ready');
  if (allReady) onGo();
  for (const proc of procs) {
    if (allReady) proc.stdin.write('go\n');
    proc.stdin.end();
  }
  return Promise.all(
    procs.map(async (proc, i) => {
      const reader = readers[i] as LineReader;
      let last: string | null = ready[i] ?? null;
      for (let l = await reader.next(); l !== null; l = await reader.next()) last = l;
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      try {
        if (last === null || !last.startsWith('{')) throw new Error('no result');
        return JSON.parse(last) as ChildResult;
      } catch {
        return {
          startMs: 0,
          endMs: 0,
          claimed: 0,
          done: 0,
          lost: 0,
          failed: 0,
          latencies: [],
          transactions: 0,
          busyRetries: 0,
          error: `worker exited with code ${code} without a result${allReady ? '' : ' (a sibling never got ready)'}: ${stderr.trim().slice(-500)}`,
        };
      }
    }),
  );
}
