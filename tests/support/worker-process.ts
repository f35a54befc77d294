/**
 * Real `onceq worker` processes for the service tests: started with Bun.spawn, their
 * output read as it arrives, signalled and awaited by pid. Every wait is for a condition
 * with a generous bound, never a fixed sleep.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '@onceq/core';
import { queueSnapshot } from '@onceq/core/admin';
import { SQL } from 'bun';
import { BIN } from './cli.ts';

export interface WorkerProcess {
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves once `pattern` appears in stderr (the worker's log and the test handler's notes). */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
  signal(name: 'SIGTERM' | 'SIGINT'): void;
  /** Exit code; SIGKILLs the process if it is still running after `timeoutMs`. */
  exited(timeoutMs?: number): Promise<number>;
}

export function startWorker(
  args: string[],
  cwd: string,
  extraEnv: Record<string, string> = {},
): WorkerProcess {
  return startOnceq(['worker', ...args], cwd, extraEnv);
}

/** Any `onceq` command as a real process, read and signalled like {@link startWorker}'s. */
export function startOnceq(
  args: string[],
  cwd: string,
  extraEnv: Record<string, string> = {},
): WorkerProcess {
  const env: Record<string, string | undefined> = { ...process.env, ...extraEnv };
  delete env.ONCEQ_DB;
  delete env.CI;
  const proc = Bun.spawn(['bun', BIN, ...args], {
    cwd,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let out = '';
  let err = '';
  const pump = async (stream: ReadableStream<Uint8Array>, add: (s: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) add(decoder.decode(chunk, { stream: true }));
  };
  const pumped = Promise.all([
    pump(proc.stdout, (s) => {
      out += s;
    }),
    pump(proc.stderr, (s) => {
      err += s;
    }),
  ]);
  return {
    pid: proc.pid,
    stdout: () => out,
    stderr: () => err,
    async waitForLog(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(err)) {
        if (proc.exitCode !== null || Date.now() > deadline) {
          throw new Error(
            `worker ${proc.exitCode === null ? 'never logged' : `exited ${proc.exitCode} before logging`} ${pattern}\nstderr:\n${err}\nstdout:\n${out}`,
          );
        }
        await Bun.sleep(20);
      }
    },
    signal(name) {
      process.kill(proc.pid, name);
    },
    async exited(timeoutMs = 20_000) {
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      const code = await proc.exited;
      clearTimeout(timer);
      await pumped;
      return code;
    },
  };
}

/** A store the worker processes and the test share: a SQLite file or a fresh PostgreSQL database. */
export interface SharedStore {
  /** What `--db` gets. */
  db: string;
  /** A working directory for the processes. */
  cwd: string;
  /** The test's own connection (a separate process from every worker). */
  store: Store;
  cleanup(): Promise<void>;
}

export const BACKENDS = ['sqlite', 'postgres'] as const;

export async function sharedStore(backend: (typeof BACKENDS)[number]): Promise<SharedStore> {
  const cwd = mkdtempSync(join(tmpdir(), 'onceq-worker-'));
  if (backend === 'sqlite') {
    const db = join(cwd, 'onceq.db');
    const store = await openStore(db);
    return {
      db,
      cwd,
      store,
      async cleanup() {
        await store.close();
        rmSync(cwd, { recursive: true, force: true });
      },
    };
  }
  // PostgreSQL: a database of its own, so the CLI's default schema is this test's alone.
  const base = process.env.DATABASE_URL as string;
  const name = `w_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new SQL(base);
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  // The test cluster trusts local connections, so a password in the URL is accepted and
  // ignored: the worker's output can be checked for never printing it.
  url.password = WORKER_TEST_PASSWORD;
  const store = await openStore(url.toString());
  return {
    db: url.toString(),
    cwd,
    store,
    async cleanup() {
      await store.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}

/**
 * A JSONL batch of `E0001…` book events for the slow handler: each entry a `sleep_ms`
 * (0 = none) or `{ gate }`, a file whose creation lets the handler return.
 */
export function sleepyBatch(sleeps: readonly (number | { gate: string })[]): string {
  return sleeps
    .map((ms, i) => {
      const payload = {
        category: 'book',
        amount_cents: 100 * (i + 1),
        ...(typeof ms === 'object' ? { gate: ms.gate } : ms > 0 ? { sleep_ms: ms } : {}),
      };
      return `${JSON.stringify({ event_id: `E${String(i + 1).padStart(4, '0')}`, payload })}\n`;
    })
    .join('');
}

/**
 * The store's clock now (PostgreSQL: the server's), whole seconds: what a worker gets as
 * `--now` to run on a clock that stands still. Under it a lease never runs out however
 * slowly the machine runs the worker's heartbeats; only a write of someone else (or a
 * later `--now`) ends it.
 */
export async function storeNow(store: Store): Promise<number> {
  return (await queueSnapshot(store)).now;
}

/** A password in the PostgreSQL URL the workers get; it must never appear in their output. */
export const WORKER_TEST_PASSWORD = 'worker-secret-pw';

export const SLOW_HANDLER = join(import.meta.dir, 'handlers', 'slow.ts');
export const STUCK_HANDLER = join(import.meta.dir, 'handlers', 'stuck.ts');
export const QUOTING_HANDLER = join(import.meta.dir, 'handlers', 'quoting.ts');
