/**
 * Runs the real `onceq` process (`bun apps/cli/src/bin.ts …`) in a fresh temporary
 * working directory, so each test gets its own `./onceq.db` and `onceq.config.json`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from './spawn.ts';

export const BIN = resolve(import.meta.dir, '../../apps/cli/src/bin.ts');
export const DEMO_JSONL = resolve(import.meta.dir, '../../examples/demo.jsonl');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time of the process, in ms. */
  ms: number;
}

export interface RunOptions {
  /** Text piped to stdin; without it stdin is empty (not a terminal). */
  stdin?: string;
  /** Extra environment; `ONCEQ_DB`, `ONCEQ_DEBUG` and `CI` are removed unless set here. */
  env?: Record<string, string>;
}

export interface CliSandbox {
  /** The temporary working directory. */
  cwd: string;
  run(args: string[], options?: RunOptions): Promise<CliResult>;
  /** Removes the directory. */
  cleanup(): void;
}

export function cliSandbox(): CliSandbox {
  const cwd = mkdtempSync(join(tmpdir(), 'onceq-cli-'));
  return {
    cwd,
    run: (args, options) => runOnceq(args, cwd, options),
    cleanup: () => rmSync(cwd, { recursive: true, force: true }),
  };
}

export async function runOnceq(
  args: string[],
  cwd: string,
  options: RunOptions = {},
): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  delete env.ONCEQ_DEBUG;
  delete env.CI;
  Object.assign(env, options.env);
  const started = performance.now();
  const { code, stdout, stderr } = await runProcess(['bun', BIN, ...args], {
    cwd,
    env,
    ...(options.stdin === undefined ? {} : { stdin: new TextEncoder().encode(options.stdin) }),
  });
  return { code, stdout, stderr, ms: performance.now() - started };
}

/** Parses stdout as exactly one JSON document. */
export function json<T = unknown>(result: CliResult): T {
  return JSON.parse(result.stdout) as T;
}
