import { existsSync } from 'node:fs';
import type { Store } from '@onceq/core';
import { StoreUnavailableError } from '@onceq/core';
import { systemClock } from '@onceq/core/internal';
import { isPostgresUrl, redactUrl } from '@onceq/core/postgres';
import { armedFault } from '@onceq/core/testing';
import pkg from '../package.json' with { type: 'json' };
import { boolFlag, GLOBAL_OPTIONS, intFlag, parseFlags, splitCommand, stringFlag } from './args.ts';
import { type AnyCommand, commandOptions, type RunEnv } from './command.ts';
import { COMMAND_NAMES, loadCommand } from './commands/index.ts';
import { describeSource, lazyConfig, type OnceqConfig, resolveDb } from './config.ts';
import type { Context } from './context.ts';
import { describeError, UsageError } from './errors.ts';
import { commandHelp, globalHelp } from './help.ts';
import { toJson } from './output.ts';
import { describeOpenFailure, storePathProblem } from './store-path.ts';
import { didYouMean } from './suggest.ts';

export const VERSION: string = pkg.version;

/** The latest `--now` accepted: 9999-12-31T23:59:59Z. */
const MAX_NOW = 253_402_300_799;

/**
 * Runs one `onceq` invocation and resolves to its exit code; never throws. Parsing and
 * printing live here and in commands/; the queue logic is all in @onceq/core.
 * With `--json` a failure is also one JSON document on stdout.
 */
export async function runCli(argv: readonly string[], ctx: Context): Promise<number> {
  try {
    // At start, not at the first crash point: a typo in ONCEQ_FAULT must not silently
    // disarm a crash test that never reaches one.
    armedFault();
    return await dispatch(argv, ctx);
  } catch (error) {
    const { exitCode, lines, json } = describeError(error, ctx.env.ONCEQ_DEBUG === '1');
    for (const line of lines) ctx.err(line);
    if (argv.includes('--json')) ctx.out(toJson(json));
    return exitCode;
  }
}

async function dispatch(argv: readonly string[], ctx: Context): Promise<number> {
  const { command: name, rest } = splitCommand(argv);
  if (name === undefined || name === 'help') {
    const { values, positionals } = parseFlags(rest, {}, 'onceq');
    const topic = name === 'help' ? positionals[0] : undefined;
    if (topic !== undefined) {
      const command = await loadCommand(topic);
      if (command === undefined) throw unknownCommand(topic);
      for (const line of commandHelp(command)) ctx.out(line);
      return 0;
    }
    if (boolFlag(values, 'version')) return printVersion(values, ctx);
    if (name === 'help' || boolFlag(values, 'help')) {
      for (const line of await globalHelp(VERSION)) ctx.out(line);
      return 0;
    }
    for (const line of await globalHelp(VERSION)) ctx.err(line);
    throw new UsageError('missing command');
  }
  const command = await loadCommand(name);
  if (command === undefined) throw unknownCommand(name);
  const { values, positionals } = parseFlags(rest, commandOptions(command), name);
  if (boolFlag(values, 'help')) {
    for (const line of commandHelp(command)) ctx.out(line);
    return 0;
  }
  if (boolFlag(values, 'version')) return printVersion(values, ctx);
  const now = intFlag(values, 'now', { max: MAX_NOW });
  const config = await lazyConfig(ctx.cwd);
  const args = await command.parse({ values, positionals, config, ctx });
  const dbFlag = stringFlag(values, 'db');
  const clock = now === undefined ? systemClock : () => now;

  const store = command.opensStore
    ? await openFor(command, args, dbFlag, ctx, config, clock)
    : undefined;
  const env: RunEnv = {
    ctx,
    json: boolFlag(values, 'json') === true,
    clock,
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

/**
 * Opens the store a command needs. SQLite: a read-only command refuses a file that does
 * not exist (a mistyped `--db` must not look like an empty queue) and opens it read-only;
 * a writing command says on stderr when it creates a new store. A path that cannot work
 * is named with its cause, not SQLite's words.
 */
async function openFor(
  command: AnyCommand,
  args: unknown,
  dbFlag: string | undefined,
  ctx: Context,
  config: () => OnceqConfig,
  clock: () => number,
): Promise<Store> {
  const { target, source } = resolveDb(dbFlag, ctx.env, ctx.cwd, config);
  const readOnly = command.readOnly === true;
  if (!isPostgresUrl(target) && target !== ':memory:') {
    if ((readOnly || command.existingStore === true) && !existsSync(target)) {
      throw new UsageError(
        `no store at ${target} (from ${describeSource(source)}); check the path, or create one with onceq setup or onceq enqueue`,
      );
    }
    const problem = storePathProblem(target, readOnly ? 'read' : 'write');
    if (problem !== null) throw new UsageError(`cannot use the store ${target}: ${problem}`);
    if (!existsSync(target)) ctx.err(`creating a new store at ${target}`);
  }
  // Loaded here, not at the top: Kysely and the migrations are the largest part of
  // start-up, and help, completion and --version never open a store.
  const { openStore } = await import('@onceq/core/open');
  try {
    return await openStore(target, {
      clock,
      readOnly,
      mustExist: command.existingStore === true,
      ...(command.waitForConnection === undefined
        ? {}
        : {
            waitForConnection: {
              onWait: (message: string) => command.waitForConnection?.(args, message, ctx),
            },
          }),
    });
  } catch (error) {
    const cause =
      error instanceof StoreUnavailableError && !isPostgresUrl(target)
        ? describeOpenFailure(error.message, target)
        : null;
    if (cause === null) throw error;
    throw new StoreUnavailableError(`cannot use the store ${target}: ${cause}`, { cause: error });
  }
}

/**
 * `onceq --version`: the version, and the schema version of the store the flags, env and
 * config name, when one exists. Read by a probe: no SQLite file or PostgreSQL schema is
 * created to answer, and an older store is not migrated.
 */
async function printVersion(values: Record<string, unknown>, ctx: Context): Promise<number> {
  const json = values.json === true;
  let target: string;
  try {
    target = resolveDb(
      stringFlag(values as never, 'db'),
      ctx.env,
      ctx.cwd,
      await lazyConfig(ctx.cwd),
    ).target;
  } catch {
    target = '';
  }
  const { probeSchemaVersion, SCHEMA_VERSION } = await import('@onceq/core/schema-version');
  let storeSchema: number | null = null;
  let exists = target !== '' && (isPostgresUrl(target) || existsSync(target));
  if (exists) {
    // A probe, not openStore: answering --version never creates a file or a schema, and
    // never migrates an older store.
    try {
      storeSchema = await probeSchemaVersion(target);
    } catch (error) {
      // A server that refuses (a wrong password, no such host) is an error, not "no store".
      if (isPostgresUrl(target)) throw error;
      exists = false;
    }
  }
  if (json) {
    ctx.out(
      toJson({
        version: VERSION,
        schema: SCHEMA_VERSION,
        store_schema: exists ? storeSchema : null,
      }),
    );
    return 0;
  }
  ctx.out(`onceq ${VERSION} (schema version ${SCHEMA_VERSION})`);
  ctx.out(
    exists
      ? `store: schema version ${storeSchema ?? 'none'}`
      : `store: no store${target === '' ? '' : ` at ${isPostgresUrl(target) ? redactUrl(target) : target}`}`,
  );
  return 0;
}

function unknownCommand(name: string): UsageError {
  const names = [...COMMAND_NAMES];
  return new UsageError(
    `unknown command ${JSON.stringify(name)}${didYouMean(name, names)} (commands: ${names.join(', ')})`,
  );
}

/** The global flags, for tests and help. */
export { GLOBAL_OPTIONS };
