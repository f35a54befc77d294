import type { ParseArgsOptionsConfig } from 'node:util';
import type { Clock, Store } from '@onceq/core';
import type { FlagValues } from './args.ts';
import type { OnceqConfig } from './config.ts';
import type { Context } from './context.ts';
import { type FlagSpecs, flagLabel, parseOptions } from './flags.ts';

/** What a command's `parse` sees: the flags and arguments, and the config file on demand. */
export interface CommandInput {
  values: FlagValues;
  positionals: string[];
  /** `onceq.config.json` of the working directory, read on first call. */
  config: () => OnceqConfig;
  ctx: Context;
}

/** What a command's `run` gets besides its parsed arguments. */
export interface RunEnv {
  ctx: Context;
  json: boolean;
  clock: Clock;
  /** The `--now` flag, when given. */
  now: number | undefined;
  /** The `--db` flag as given (setup and demo resolve the store themselves). */
  dbFlag: string | undefined;
  config: () => OnceqConfig;
  /** The open store (commands with `opensStore`); closed by the runner afterwards. */
  store: Store;
}

/** The parts of a command that `parse` and `run` do not need: what help and docs print. */
interface CommandDescription {
  name: string;
  /** One line for the command list. */
  summary: string;
  /**
   * The command's own flags. A global flag named here too keeps its parsing and gets
   * this description in the command's help (`demo --db` makes a new store).
   */
  flags: FlagSpecs;
  /** The arguments after the command, for the synopsis (`<id>`, `<file|->`), and their help. */
  operands?: { synopsis: string; help?: readonly [string, string][] };
  /** Extra `[label, text]` rows for help, after the flags (a format, limits). */
  notes?: readonly [string, string][];
  /** One or two example invocations for `--help` (without the leading `onceq `). */
  examples?: readonly string[];
}

/**
 * One `onceq` command. `parse` validates everything it can without the store (usage
 * errors before any file is created); `run` does the work through @onceq/core and prints.
 */
export interface Command<A> extends CommandDescription {
  /** The runner opens the store (applying migrations) before `run` and closes it after. */
  opensStore: boolean;
  /**
   * The command only reads: a SQLite store that does not exist is refused (exit 2, naming
   * the path) instead of created, and an existing one is opened read-only. Default false.
   */
  readOnly?: boolean;
  /**
   * The command changes only messages a store already holds (redrive, fail): a SQLite
   * store that does not exist is refused (exit 2, naming the path) instead of created
   * empty. Implied by `readOnly`. Default false.
   */
  existingStore?: boolean;
  /**
   * A long-running command (the worker): on PostgreSQL, a server with no connection to
   * give at open (`max_connections` reached) is waited for, with backoff, instead of
   * failing; this writes the one line that says so. Default: the command fails at once.
   */
  waitForConnection?(args: A, message: string, ctx: Context): void;
  parse(input: CommandInput): A | Promise<A>;
  /** Resolves to the exit code. */
  run(args: A, env: RunEnv): Promise<number>;
}

/** A command with its argument type erased, for the registry. */
export type AnyCommand = Command<unknown>;

export function defineCommand<A>(command: Command<A>): AnyCommand {
  return command as unknown as AnyCommand;
}

/** The `util.parseArgs` options of a command (its own flags; the runner adds the global ones). */
export function commandOptions(command: AnyCommand): ParseArgsOptionsConfig {
  return parseOptions(command.flags);
}

/**
 * The synopsis after `onceq `: the operands, the required flags, then `[flags]` when there
 * are optional ones: `fail <id> --generation <G> [flags]`.
 */
export function synopsis(command: AnyCommand): string {
  const parts = [command.name];
  if (command.operands !== undefined) parts.push(command.operands.synopsis);
  const entries = Object.entries(command.flags);
  for (const [name, spec] of entries) {
    if (spec.required === true) parts.push(flagLabel(name, spec));
  }
  if (entries.some(([, spec]) => spec.required !== true)) parts.push('[flags]');
  return parts.join(' ');
}
