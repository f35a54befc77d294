#!/usr/bin/env bun
/** The `onceq` executable: wires the process to the CLI and exits with its code. */
import { handlersPastDeadline } from '@onceq/core/internal';
import { runCli } from './cli.ts';
import { processContext } from './context.ts';

const argv = process.argv.slice(2);
// In the compiled binary the demo's crash child has no script file on disk: the demo
// spawns this same executable with the child's embedded path (under /$bunfs/) first.
if (argv[0]?.startsWith('/$bunfs/') && argv[0].endsWith('crash-child.ts')) {
  const { runCrashChild } = await import('@onceq/demo');
  await runCrashChild(argv.slice(1));
} else {
  const context = contextOrNull();
  const code = context === null ? 2 : await runCli(argv, context);
  process.exitCode = code;
  exitPastLateHandlers(code);
}

/**
 * The command is over, but a handler that ran past its deadline and ignored its aborted
 * signal may still hold a timer of its own, which would keep the process alive: say so
 * and exit once stderr is written.
 */
function exitPastLateHandlers(code: number): void {
  const late = handlersPastDeadline();
  if (late === 0) return;
  const calls = late === 1 ? '1 handler call' : `${late} handler calls`;
  process.stderr.write(
    `onceq: ${calls} ignored the aborted signal and still run; exiting without waiting for ${late === 1 ? 'it' : 'them'}\n`,
    () => process.exit(code),
  );
}

/**
 * The process context, or null after saying why not: the one way it fails is a current
 * directory deleted under the shell (`process.cwd()` throws ENOENT), and every relative
 * path (`--db`, a batch file, `onceq.config.json`) depends on it.
 */
function contextOrNull(): ReturnType<typeof processContext> | null {
  try {
    return processContext();
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
    console.error(
      'onceq: the current directory no longer exists (it was deleted); cd to another directory and run the command again',
    );
    return null;
  }
}
