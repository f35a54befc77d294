#!/usr/bin/env bun
/** The `onceq` executable: wires the process to the CLI and exits with its code. */
import { runCli } from './cli.ts';
import { processContext } from './context.ts';

process.exitCode = await runCli(process.argv.slice(2), processContext());
