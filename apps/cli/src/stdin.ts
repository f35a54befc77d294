import { BatchRejectedError } from '@onceq/core';

/**
 * Reads `stream` (stdin for `enqueue -`) to its end, refusing it as soon as it holds more
 * than `limit` bytes: reading stops there and the rest is never buffered, so piping
 * 300 MB in costs one chunk past the limit, not 300 MB of memory. The refusal is a
 * {@link BatchRejectedError} (exit code 3) like an oversized batch file's.
 */
export async function readWithin(
  stream: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BatchRejectedError([
        { line: 0, reason: `stdin holds more than ${limit} bytes, the limit is ${limit}` },
      ]);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** Stdin of this process, read with {@link readWithin}. */
export function readStdinWithin(limit: number): Promise<Uint8Array> {
  return readWithin(Bun.stdin.stream(), limit);
}
