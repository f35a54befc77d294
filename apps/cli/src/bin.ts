#!/usr/bin/env bun
/** The `onceq` executable: wires the process to the CLI and exits with its code. */
import { runCli } from './cli.ts';
import { processContext } from './context.ts';

const argv = process.argv.slice(2);
// In the compiled binary the demo's crash child has no script file on disk: the demo
// spawns this same executable with the child's embedded path (under /$bunfs/) first.
if (argv[0]?.startsWith('/$bunfs/') && argv[0].endsWith('crash-child.ts')) {
  const { runCrashChild } = await import('@onceq/demo');
  await runCrashChild(argv.slice(1));
} else {
  process.exitCode = await runCli(argv, processContext());
}
