import { openStore, type Store, systemClock } from '@onceq/core';
import pkg from '../package.json' with { type: 'json' };
import { boolFlag, GLOBAL_OPTIONS, intFlag, parseFlags, splitCommand, stringFlag } from './args.ts';
import type { RunEnv } from './command.ts';
import { COMMANDS, findCommand } from './commands/index.ts';
import { lazyConfig, passwordOf, resolveDb } from './config.ts';
import type { Context } from './context.ts';
import { describeError, UsageError } from './errors.ts';
import { commandHelp, globalHelp } from './help.ts';

export const VERSION: string = pkg.version;

/**
 * Runs one `onceq` invocation and resolves to its exit code; never throws. Parsing and
 * printing live here and in commands/; the queue logic is all in @onceq/core.
 */
export async function runCli(argv: readonly string[], ctx: Context): Promise<number> {
  const secrets: string[] = [];
  try {
    return await dispatch(argv, ctx, secrets);
  } catch (error) {
    const { exitCode, lines } = describeError(error, ctx.env.ONCEQ_DEBUG === '1', secrets);
    for (const line of lines) ctx.err(line);
    return exitCode;
  }
}

async function dispatch(argv: readonly string[], ctx: Context, secrets: string[]): Promise<number> {
  const { command: name, rest } = splitCommand(argv);
  if (name === undefined || name === 'help') {
    const { values, positionals } = parseFlags(rest, {}, 'onceq');
    const topic = name === 'help' ? positionals[0] : undefined;
    if (topic !== undefined) {
      const command = findCommand(topic);
      if (command === undefined) throw unknownCommand(topic);
      for (const line of commandHelp(command)) ctx.out(line);
      return 0;
    }
    if (boolFlag(values, 'version')) {
      ctx.out(VERSION);
      return 0;
    }
    if (name === 'help' || boolFlag(values, 'help')) {
      for (const line of globalHelp(VERSION)) ctx.out(line);
      return 0;
    }
    for (const line of globalHelp(VERSION)) ctx.err(line);
    throw new UsageError('missing command');
  }
  const command = findCommand(name);
  if (command === undefined) throw unknownCommand(name);
  const { values, positionals } = parseFlags(rest, command.options, name);
  if (boolFlag(values, 'help')) {
    for (const line of commandHelp(command)) ctx.out(line);
    return 0;
  }
  if (boolFlag(values, 'version')) {
    ctx.out(VERSION);
    return 0;
  }
  const now = intFlag(values, 'now');
  const config = lazyConfig(ctx.cwd);
  const args = await command.parse({ values, positionals, config, ctx });
  const dbFlag = stringFlag(values, 'db');

  let store: Store | undefined;
  if (command.opensStore) {
    const { target } = resolveDb(dbFlag, ctx.env, ctx.cwd, config);
    secrets.push(...passwordOf(target));
    store = await openStore(target, { clock: now === undefined ? systemClock : () => now });
  } else if (dbFlag !== undefined) {
    secrets.push(...passwordOf(dbFlag));
  }
  const env: RunEnv = {
    ctx,
    json: boolFlag(values, 'json') === true,
    clock: now === undefined ? systemClock : () => now,
    now,
    dbFlag,
    config,
    get store(): Store {
      if (store === undefined) throw new Error(`${name} does not open the store`);
      return store;
    },
  };
  try {
    return await command.run(args, env);
  } finally {
    await store?.close();
  }
}

function unknownCommand(name: string): UsageError {
  return new UsageError(
    `unknown command ${JSON.stringify(name)} (commands: ${COMMANDS.map((c) => c.name).join(', ')})`,
  );
}

/** The global flags, for tests and help. */
export { GLOBAL_OPTIONS };
