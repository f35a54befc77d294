/**
 * Helpers for the fault storms (tests/storm-*.test.ts): real `onceq` CLI processes,
 * bounded in time, whose stderr is checked against the CLI contract (exit 0, or exit 1
 * with exactly one `onceq:` sentence, never a stack trace), and the batch files and
 * totals the storms start from and end with.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from './cli.ts';
import { eventId, line, paid } from './factories.ts';

/** The model second every storm runs at; the final drain runs well after it. */
export const STORM_NOW = 2_000_000;

/** How long one CLI run may take before the storm calls it hung (killed, then reported). */
const RUN_LIMIT_MS = 60_000;

/** Categories the v1 handler accepts, in a fixed rotation. */
const CATEGORIES = ['book', 'pen', 'bag'] as const;

/** The payload of event number `n`: deterministic, so the expected totals are known. */
export function stormPayload(n: number): { category: string; amount_cents: number } {
  return paid(CATEGORIES[n % CATEGORIES.length] as string, 100 + n) as {
    category: string;
    amount_cents: number;
  };
}

/** The totals by category and overall that `count` events 1..count add up to once each. */
export function expectedTotals(count: number): { totals: Record<string, number>; total: number } {
  const totals: Record<string, number> = {};
  let total = 0;
  for (let n = 1; n <= count; n++) {
    const { category, amount_cents } = stormPayload(n);
    totals[category] = (totals[category] ?? 0) + amount_cents;
    total += amount_cents;
  }
  return { totals, total };
}

/**
 * Writes events 1..count as JSONL files of `perFile` lines each under `dir` and returns
 * their paths. Files overlap by one line with the next one, so every enqueue after the
 * first sees a duplicate (the idempotent path runs under the storm too).
 */
export function writeBatchFiles(dir: string, count: number, perFile: number): string[] {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (let first = 1; first <= count; first += perFile) {
    const last = Math.min(count, first + perFile);
    const lines: string[] = [];
    for (let n = first; n <= last; n++) lines.push(line(eventId(n), stormPayload(n)));
    const file = join(dir, `batch-${files.length}.jsonl`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    files.push(file);
  }
  return files;
}

/** One finished CLI run of a storm. */
export interface StormRun {
  args: string[];
  code: number | null;
  signal: NodeJS.Signals | number | null;
  stdout: string;
  stderr: string;
}

/** A running CLI process: kill it, or wait for it. */
export interface StormProcess {
  pid: number;
  /** Resolves when the process ended, with everything it printed. */
  done: Promise<StormRun>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts `onceq <args>` (the real CLI, `bun apps/cli/src/bin.ts`), in `cwd`. */
export function startOnceq(args: string[], cwd: string): StormProcess {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  delete env.ONCEQ_DEBUG;
  delete env.CI;
  const proc = Bun.spawn(['bun', BIN, ...args], {
    cwd,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const limit = setTimeout(() => proc.kill('SIGKILL'), RUN_LIMIT_MS);
  const done = Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]).then(([stdout, stderr]) => {
    clearTimeout(limit);
    return { args, code: proc.exitCode, signal: proc.signalCode ?? null, stdout, stderr };
  });
  return { pid: proc.pid, done, kill: (signal) => proc.kill(signal) };
}

/** Runs `onceq <args>` to its end. */
export function runOnceqRun(args: string[], cwd: string): Promise<StormRun> {
  return startOnceq(args, cwd).done;
}

/**
 * Lines that only a stack trace or a code frame prints: `    at fn (file:line)`, Bun's
 * source excerpt (`12 | code`), its caret line, or an error class name at the start.
 */
const TRACE_LINE =
  /^\s+at\s|^\s*\d+\s*\|\s|^\s*\^\s*$|^(?:error|Error|TypeError|AggregateError)\b|node_modules/;

/** How many lines of `stderr` belong to a stack trace or a code frame. */
export function traceLines(stderr: string): number {
  return stderr.split('\n').filter((l) => TRACE_LINE.test(l)).length;
}

const NOTE_LINE = /^handler \S+ \(from .+\)$|^creating a new store at /;

/**
 * Why a CLI run broke the error contract, or `undefined` when it kept it: exit 0, or
 * exit 1 with exactly one line on stderr that starts `onceq:` and no trace. A run the
 * storm killed itself (a signal) keeps the contract by definition.
 */
export function contractBreach(run: StormRun): string | undefined {
  if (run.signal !== null) return undefined;
  // The notes the CLI prints on stderr before it works (which handler and where it came
  // from, a store being created) are not errors.
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '' && !NOTE_LINE.test(l));
  if (run.code === 0 && traceLines(run.stderr) === 0) return undefined;
  if (run.code === 1 && lines.length === 1 && lines[0]?.startsWith('onceq:')) return undefined;
  return `onceq ${run.args.join(' ')} → exit ${run.code}, stderr:\n${run.stderr}`;
}

/** Resolves after `ms`, for pacing a storm (never for waiting on a result). */
export function pause(ms: number): Promise<void> {
  return Bun.sleep(ms);
}

/** A deterministic pseudo-random sequence (mulberry32), so a storm can print its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The runs of a storm as events: how many are in flight, how many have ended. A
 * disruptor waits on it for "a run is in flight and one ended since my last shot", so
 * disruptions land while the storm runs, however fast or slow the machine is, and the
 * storm's loops run until the planned disruptions have landed. Every wait is bounded.
 */
export class StormActivity {
  inFlight = 0;
  ended = 0;
  /** Starts and ends so far: changes at every event. */
  events = 0;
  #waiters: (() => void)[] = [];

  /** Runs `onceq <args>` as one counted run. */
  async run(args: string[], cwd: string): Promise<StormRun> {
    return this.track(startOnceq(args, cwd));
  }

  /** Counts `proc` as in flight until it ends. */
  async track(proc: StormProcess): Promise<StormRun> {
    this.inFlight++;
    this.events++;
    this.#wake();
    try {
      return await proc.done;
    } finally {
      this.inFlight--;
      this.ended++;
      this.events++;
      this.#wake();
    }
  }

  /**
   * Resolves true once `condition` holds (checked now and at every start and end of a
   * run), false after `timeoutMs` without it.
   */
  async until(condition: () => boolean, timeoutMs = 120_000): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!condition()) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return true;
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
