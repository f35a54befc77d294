import { MAX_BATCH_BYTES, MAX_BATCH_LINES } from '@onceq/core/internal';

/** A run of consecutive lines of a larger file, small enough to be one batch. */
export interface Chunk {
  bytes: Uint8Array;
  /** 1-based line numbers in the whole file. */
  firstLine: number;
  lastLine: number;
}

const NEWLINE = 10;

/**
 * Cuts a JSONL file at line ends into chunks of at most `MAX_BATCH_LINES` non-empty lines
 * and `MAX_BATCH_BYTES` bytes (for `enqueue --split`). A single line longer than the byte
 * limit becomes a chunk of its own, which the batch parser then rejects by name.
 */
export function splitBatch(bytes: Uint8Array): Chunk[] {
  const chunks: Chunk[] = [];
  let start = 0;
  let firstLine = 1;
  let line = 0;
  let nonEmpty = 0;
  let lineStart = 0;
  while (lineStart < bytes.length) {
    let end = bytes.indexOf(NEWLINE, lineStart);
    end = end === -1 ? bytes.length : end + 1;
    const blank = isBlank(bytes, lineStart, end);
    const wouldOverflow =
      lineStart > start &&
      ((!blank && nonEmpty === MAX_BATCH_LINES) || end - start > MAX_BATCH_BYTES);
    if (wouldOverflow) {
      chunks.push({ bytes: bytes.subarray(start, lineStart), firstLine, lastLine: line });
      start = lineStart;
      firstLine = line + 1;
      nonEmpty = 0;
    }
    line++;
    if (!blank) nonEmpty++;
    lineStart = end;
  }
  if (start < bytes.length || chunks.length === 0) {
    chunks.push({ bytes: bytes.subarray(start), firstLine, lastLine: Math.max(line, firstLine) });
  }
  return chunks;
}

function isBlank(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const b = bytes[i];
    if (b !== 32 && b !== 9 && b !== 13 && b !== 10) return false;
  }
  return true;
}
