import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { isQueueName, QUEUE_NAME_RULE } from '@onceq/core/internal';
import { UsageError } from './errors.ts';
import { type FlagSpecs, parseOptions, valueFlags } from './flags.ts';
import { didYouMean } from './suggest.ts';

/** Flags every command accepts. */
export const GLOBAL_FLAGS = {
  db: {
    type: 'string',
    value: 'path|postgres://…',
    help: 'the store (default: $ONCEQ_DB, then onceq.config.json, then ./onceq.db)',
  },
  now: {
    type: 'string',
    value: 'unix seconds',
    help: 'model clock: every read of the time returns this',
  },
  json: { type: 'boolean', help: 'machine-readable output: one JSON document on stdout' },
  help: { type: 'boolean', short: 'h', help: 'help (global, or for one command)' },
  version: {
    type: 'boolean',
    short: 'v',
    help: "print the version and the store's schema version",
  },
} as const satisfies FlagSpecs;

/** The global flags as `util.parseArgs` options. */
export const GLOBAL_OPTIONS = parseOptions(GLOBAL_FLAGS);

export type FlagValues = Record<string, string | boolean | undefined>;

export interface ParsedArgs {
  values: FlagValues;
  positionals: string[];
}

/** Global flags that take a value: the token after them is not the command. */
const VALUE_FLAGS = new Set(valueFlags(GLOBAL_FLAGS));

/**
 * Splits `argv` into the command name (the first bare word) and everything else, so
 * global flags may stand before or after the command.
 */
export function splitCommand(argv: readonly string[]): { command?: string; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') break;
    if (VALUE_FLAGS.has(token)) {
      i++;
      continue;
    }
    if (!token.startsWith('-')) {
      return { command: token, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
    }
  }
  return { rest: [...argv] };
}

/**
 * Parses flags strictly (`util.parseArgs`): an unknown flag, a missing value or a value
 * given to a switch is a {@link UsageError} (exit 2) naming the flag.
 */
export function parseFlags(
  args: readonly string[],
  options: ParseArgsOptionsConfig,
  where: string,
): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: { ...GLOBAL_OPTIONS, ...options },
      strict: true,
      allowPositionals: true,
      allowNegative: true,
    });
    return { values: { ...values } as FlagValues, positionals };
  } catch (error) {
    const known = Object.keys({ ...GLOBAL_OPTIONS, ...options }).map((name) => `--${name}`);
    throw new UsageError(describeParseError(error, where, known));
  }
}

function describeParseError(error: unknown, where: string, known: readonly string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const flag = /'(-[^' ]*)/.exec(message)?.[1] ?? '';
  const help = `see onceq ${where === 'onceq' ? '' : `${where} `}--help`;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const hint = didYouMean(flag.split('=')[0] ?? flag, known);
    return `unknown flag ${flag} for ${where}${hint} (${help})`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/ambiguous/.test(message)) {
      return `flag ${flag} needs a value (write ${flag}=VALUE for a value starting with -)`;
    }
    if (/argument missing/.test(message)) return `flag ${flag} needs a value (${help})`;
    if (/does not take an argument/.test(message)) return `flag ${flag} takes no value (${help})`;
    return `invalid value for ${flag} (${help})`;
  }
  return `${message} (${help})`;
}

export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** `--queue NAME`, checked against the queue name rule; undefined when not given. */
export function queueFlag(values: FlagValues): string | undefined {
  const queue = stringFlag(values, 'queue');
  if (queue !== undefined && !isQueueName(queue)) {
    throw new UsageError(`--queue must be ${QUEUE_NAME_RULE}, got ${JSON.stringify(queue)}`);
  }
  return queue;
}

export function boolFlag(values: FlagValues, name: string): boolean | undefined {
  const value = values[name];
  return typeof value === 'boolean' ? value : undefined;
}

/**
 * A whole number flag in `[min, max]`, or undefined when absent. Only plain decimal digits:
 * `1e3`, `-1`, `2.5` and `0x10` are usage errors naming the flag.
 */
export function intFlag(
  values: FlagValues,
  name: string,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number | undefined {
  const raw = stringFlag(values, name);
  if (raw === undefined) return undefined;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (/^[0-9]+$/.test(raw) && (!Number.isSafeInteger(n) || n > max)) {
    throw new UsageError(
      `--${name} is out of range: ${raw} is more than ${max.toLocaleString('en-US')}`,
    );
  }
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = min === 0 ? 'a non-negative whole number' : `a whole number ≥ ${min}`;
    throw new UsageError(`--${name} must be ${range}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/**
 * A fraction flag in `[min, max]` (`0.25`, `.5`, `1`), or undefined when absent. Plain
 * decimals only: `1e-1`, `50%` and `-0.1` are usage errors naming the flag.
 */
export function fractionFlag(
  values: FlagValues,
  name: string,
  { min, max }: { min: number; max: number },
): number | undefined {
  const raw = stringFlag(values, name);
  if (raw === undefined) return undefined;
  const n = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= min && n <= max)) {
    throw new UsageError(
      `--${name} must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/** Exactly `count` positional arguments, named in the error by `names`. */
export function expectPositionals(
  positionals: readonly string[],
  names: string[],
  where: string,
): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(
      `${where} needs ${names.slice(positionals.length).join(' ')} (see onceq ${where} --help)`,
    );
  }
  if (positionals.length > names.length) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(positionals[names.length])} for ${where} (see onceq ${where} --help)`,
    );
  }
  return [...positionals];
}
