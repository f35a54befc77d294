/** Small shared helpers: statistics, payload generation, scratch files, wall-clock time. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Bytes a process (this one unless `pid` is given) has read and written through system
 * calls so far (Linux `/proc/<pid>/io`: `rchar`, `wchar`; the counts include the
 * children it has reaped); null where that file cannot be read.
 */
export function ioBytes(pid: number | 'self' = 'self'): { read: number; written: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const read = /^rchar: (\d+)$/m.exec(text);
    const written = /^wchar: (\d+)$/m.exec(text);
    return read === null || written === null
      ? null
      : { read: Number(read[1]), written: Number(written[1]) };
  } catch {
    return null;
  }
}

/** What this process read and wrote since `start` (an {@link ioBytes} reading); null where either is unknown. */
export function ioSince(
  start: ReturnType<typeof ioBytes>,
): { read: number; written: number } | null {
  const now = ioBytes();
  return now === null || start === null
    ? null
    : { read: now.read - start.read, written: now.written - start.written };
}

/** `total` per one of `count`: null when the total is unknown or the count is zero. */
export function per(total: number | null, count: number): number | null {
  return total === null || count === 0 ? null : total / count;
}

/** Median with min and max, the summary of repeated runs on a noisy machine. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return {
    median,
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
    n: values.length,
  };
}

/** Nearest-rank percentile (p in 0..100) of an unsorted sample. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Milliseconds on a clock shared by all processes of the machine (sub-millisecond). */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

const CATEGORIES = ['book', 'pen', 'bag'] as const;

export function eventId(i: number): string {
  return `E${String(i).padStart(4, '0')}`;
}

/** One valid v1 line; the amount and category vary so payloads differ. */
export function line(i: number): string {
  const category = CATEGORIES[i % CATEGORIES.length];
  const amount = 1 + ((i * 7919) % 99_999);
  return `{"event_id":"${eventId(i)}","payload":{"category":"${category}","amount_cents":${amount},"note":"bench ${i}"}}`;
}

/** JSONL batches of `size` lines covering event ids `0 … count-1`, as bytes (what a file gives). */
export function batches(count: number, size = 1000): Uint8Array[] {
  const out: Uint8Array[] = [];
  const encoder = new TextEncoder();
  for (let start = 0; start < count; start += size) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(count, start + size); i++) lines.push(line(i));
    out.push(encoder.encode(`${lines.join('\n')}\n`));
  }
  return out;
}

/** A scratch directory under the system temp dir, removed by {@link removeScratch}. */
export function scratchDir(prefix: string): string {
  const base = join(tmpdir(), 'onceq-bench');
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, `${prefix}-`));
}

export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Removes a SQLite file and its WAL companions. */
export function removeDb(path: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(path + suffix, { force: true });
}

export function fmtRate(n: number): string {
  if (!Number.isFinite(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

export function fmtMs(n: number): string {
  if (!Number.isFinite(n)) return '–';
  return n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toString();
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === 'string' ? `(${code})` : ''}: ${error.message}`;
  }
  return String(error);
}
