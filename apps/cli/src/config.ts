import { existsSync, readFileSync } from 'node:fs';
import { chmod, rename, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from '@onceq/core/internal';
import { isPostgresUrl, redactUrl } from '@onceq/core/postgres';
import {
  DEFAULT_HANDLER,
  HANDLER_VERSIONS,
  type HandlerVersion,
  isHandlerVersion,
} from '@onceq/handler/versions';
import type { z } from 'zod';
import { UsageError } from './errors.ts';
import { isHandlerPath } from './handler-module.ts';

/** The config file, read from (and written by `setup` to) the current directory. */
export const CONFIG_FILE = 'onceq.config.json';

/** The store used when no flag, `ONCEQ_DB` or config names one. */
export const DEFAULT_DB = './onceq.db';

/**
 * What `onceq.config.json` may hold, checked with zod: both keys optional, no other key
 * allowed (a typo such as `"hander"` is an error, not silently ignored).
 */
function configSchema(z: typeof import('zod').z) {
  return z.strictObject({
    /** A SQLite file (relative to the config file's directory) or a `postgres://` URL. */
    db: z.string().trim().min(1, '"db" must be a non-empty string').optional(),
    /**
     * The handler `work`, `worker`, `complete`, `redrive --dry-run` and the console's
     * redrive preview use by default: a version, or your own module (a path relative to
     * the config file's directory).
     */
    handler: z
      .string()
      .refine((value) => isHandlerVersion(value) || isHandlerPath(value))
      .optional(),
    /** Where `onceq deliver` sends deliveries, by the name completions deliver `to`. */
    endpoints: z
      .record(
        z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
        z.strictObject({
          url: z.url({ protocol: /^https?$/ }),
          secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
          timeout_seconds: z.number().min(0.001).max(600).optional(),
          retry_schedule: z
            .array(
              z
                .int()
                .min(0)
                .max(30 * 86_400),
            )
            .min(1)
            .max(100)
            .optional(),
          concurrency: z.int().min(1).max(1000).optional(),
        }),
      )
      .optional(),
    /**
     * Queues by name: each one's handler module (or version) and policy, for `worker`
     * and `work` (docs/worker.md, "Policy").
     */
    queues: z
      .record(
        z.string().regex(QUEUE_NAME_PATTERN),
        z.strictObject({
          handler: z
            .string()
            .refine((value) => isHandlerVersion(value) || isHandlerPath(value))
            .optional(),
          attempts: z.int().min(1).max(1000).optional(),
          backoff: z.string().optional(),
          lease: z.union([z.string(), z.int()]).optional(),
          on_dead: z.string().optional(),
        }),
      )
      .optional(),
    /** Where `onceq serve` accepts webhooks, by source name. */
    sources: z
      .record(
        z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
        z.strictObject({
          path: z.string().regex(/^\/[A-Za-z0-9/_.-]{0,200}$/),
          verify: z.enum(['standard-webhooks', 'token']),
          secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
          token_header: z
            .string()
            .regex(/^[A-Za-z0-9-]{1,100}$/)
            .optional(),
          event_id_header: z
            .string()
            .regex(/^[A-Za-z0-9-]{1,100}$/)
            .optional(),
          event_id_field: z.string().min(1).max(100).optional(),
          tolerance_seconds: z.int().min(1).max(86_400).optional(),
        }),
      )
      .optional(),
  });
}

const CONFIG_KEYS = ['db', 'handler', 'queues', 'endpoints', 'sources'];

/**
 * One queue of `onceq.config.json`'s `queues`: the handler its workers run, and its
 * policy (docs/worker.md): attempts, backoff schedule, lease (`"30s"` or seconds) and
 * `on_dead` (`block` or `skip`).
 */
export interface QueueConfig {
  handler?: string;
  attempts?: number;
  backoff?: string;
  lease?: string | number;
  on_dead?: string;
}

/**
 * One source of `onceq.config.json`'s `sources`: the path it posts to, how it is
 * verified (`standard-webhooks` signatures, or a `token`), the environment variable
 * holding its secrets or tokens (space-separated), and where its event id is.
 */
export interface SourceConfig {
  path: string;
  verify: 'standard-webhooks' | 'token';
  secret_env: string;
  token_header?: string;
  event_id_header?: string;
  event_id_field?: string;
  tolerance_seconds?: number;
}

/**
 * One endpoint of `onceq.config.json`'s `endpoints`: its URL, the environment variable
 * holding its `whsec_` secret (several, space-separated, while one is rotated), and
 * optionally its timeout, retry schedule (seconds before each attempt) and concurrency.
 */
export interface EndpointConfig {
  url: string;
  secret_env: string;
  timeout_seconds?: number;
  retry_schedule?: number[];
  concurrency?: number;
}

/**
 * What `onceq.config.json` may hold. `handler` is a version (`v1`, `v2`) or a handler
 * module's path as written (relative to the config file's directory).
 */
export type OnceqConfig = {
  db?: string;
  handler?: string;
  queues?: Record<string, QueueConfig>;
  endpoints?: Record<string, EndpointConfig>;
  sources?: Record<string, SourceConfig>;
};

/**
 * Reads `onceq.config.json` in `cwd`: `{}` when there is none. A file that is not a JSON
 * object of the known keys is a usage error (exit 2) naming the file and the key.
 */
export async function readConfig(cwd: string): Promise<OnceqConfig> {
  return (await lazyConfig(cwd))();
}

function parseConfig(path: string, z: typeof import('zod').z): OnceqConfig {
  const bad = (why: string) => new UsageError(`invalid config file ${path}: ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw bad(error instanceof SyntaxError ? `not valid JSON (${error.message})` : String(error));
  }
  const parsed = configSchema(z).safeParse(value);
  if (!parsed.success) throw bad(describeIssue(parsed.error.issues[0]));
  const config: OnceqConfig = {};
  // The raw string, not the trimmed one: a path is taken as written.
  if (parsed.data.db !== undefined) config.db = (value as { db: string }).db;
  if (parsed.data.handler !== undefined) config.handler = parsed.data.handler;
  if (parsed.data.queues !== undefined) config.queues = parsed.data.queues;
  if (parsed.data.endpoints !== undefined) config.endpoints = parsed.data.endpoints;
  if (parsed.data.sources !== undefined) config.sources = parsed.data.sources;
  return config;
}

function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return 'invalid';
  if (issue.code === 'unrecognized_keys') {
    return `unknown key ${JSON.stringify(issue.keys[0])} (known: ${CONFIG_KEYS.join(', ')})`;
  }
  const key = issue.path[0];
  if (key === 'endpoints') {
    const where = issue.path.slice(1).map(String).join('.');
    return `"endpoints${where === '' ? '' : `.${where}`}": ${issue.message} (an endpoint is {"url", "secret_env", "timeout_seconds"?, "retry_schedule"?, "concurrency"?})`;
  }
  if (key === 'queues') {
    const where = issue.path.slice(1).map(String).join('.');
    return `"queues${where === '' ? '' : `.${where}`}": ${issue.message} (a queue's name is ${QUEUE_NAME_RULE}, and a queue is {"handler"?, "attempts"?, "backoff"?, "lease"?, "on_dead"?})`;
  }
  if (key === 'sources') {
    const where = issue.path.slice(1).map(String).join('.');
    return `"sources${where === '' ? '' : `.${where}`}": ${issue.message} (a source is {"path", "verify", "secret_env", "token_header"?, "event_id_header"?, "event_id_field"?, "tolerance_seconds"?})`;
  }
  if (key === undefined) return 'expected a JSON object like {"db": "./onceq.db", "handler": "v1"}';
  if (key === 'handler') {
    return `"handler" must be one of ${HANDLER_VERSIONS.join(', ')}, or the path of your handler module (like "./my-handler.ts")`;
  }
  return '"db" must be a non-empty string';
}

/**
 * The config of `cwd`, read at most once and only when a value is actually needed from it
 * (a broken file does not stop a command that has `--db`). zod is loaded here only when
 * the file exists: most commands start without it, and start-up is what a short command costs.
 */
export async function lazyConfig(cwd: string): Promise<() => OnceqConfig> {
  const path = join(cwd, CONFIG_FILE);
  const z = existsSync(path) ? (await import('zod')).z : undefined;
  let config: OnceqConfig | undefined;
  return () => {
    config ??= z === undefined ? {} : parseConfig(path, z);
    return config;
  };
}

/** Where a value came from, for messages. */
export type Source = 'flag' | 'ONCEQ_DB' | 'config' | 'default';

/**
 * The store to open: `--db` > `$ONCEQ_DB` > `onceq.config.json` > `./onceq.db`.
 * A relative SQLite path resolves against `cwd` (where the config file lives too).
 */
export function resolveDb(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  config: () => OnceqConfig,
): { target: string; source: Source } {
  if (flag !== undefined) {
    if (flag.trim() === '')
      throw new UsageError('--db needs a SQLite file path or a postgres:// URL');
    return { target: absolute(flag, cwd), source: 'flag' };
  }
  const fromEnv = env.ONCEQ_DB;
  if (fromEnv !== undefined && fromEnv !== '')
    return { target: absolute(fromEnv, cwd), source: 'ONCEQ_DB' };
  const fromConfig = config().db;
  if (fromConfig !== undefined) return { target: absolute(fromConfig, cwd), source: 'config' };
  return { target: absolute(DEFAULT_DB, cwd), source: 'default' };
}

/** Where the handler came from, for the `handler v2 (from onceq.config.json)` line. */
export type HandlerSource = 'flag' | 'config' | 'default';

/**
 * Which handler a command runs: `flag` > config `handler` > `v1`. A built-in version, or
 * a module whose path resolves against `cwd` for the flag and against the config file's
 * directory for the config (where `onceq.config.json` lives: `cwd` too, today).
 */
export type HandlerSpec =
  | { kind: 'builtin'; version: HandlerVersion; source: HandlerSource }
  | { kind: 'module'; spec: string; base: string; source: 'flag' | 'config' };

/**
 * Checks a `--handler` value (named `label` in messages): a built-in version or the path
 * of a handler module (`./my-handler.ts`); anything else is a usage error naming both.
 */
export function checkHandlerFlag(flag: string, label = '--handler'): void {
  if (isHandlerPath(flag) || isHandlerVersion(flag)) return;
  throw new UsageError(
    `${label} must be one of ${HANDLER_VERSIONS.join(', ')} or the path of a handler module (./my-handler.ts), got ${JSON.stringify(flag)}`,
  );
}

/** {@link HandlerSpec} of `flag` (named `label` in messages) or the config. */
export function resolveHandlerSpec(
  flag: string | undefined,
  config: () => OnceqConfig,
  cwd: string,
  label = '--handler',
): HandlerSpec {
  if (flag !== undefined) {
    checkHandlerFlag(flag, label);
    return isHandlerVersion(flag)
      ? { kind: 'builtin', version: flag, source: 'flag' }
      : { kind: 'module', spec: flag, base: cwd, source: 'flag' };
  }
  const fromConfig = config().handler;
  if (fromConfig !== undefined) {
    return isHandlerVersion(fromConfig)
      ? { kind: 'builtin', version: fromConfig, source: 'config' }
      : { kind: 'module', spec: fromConfig, base: cwd, source: 'config' };
  }
  return { kind: 'builtin', version: DEFAULT_HANDLER, source: 'default' };
}

/** `handler v2 (from onceq.config.json)`: which handler runs and why. */
export function describeHandler(version: string, source: HandlerSource): string {
  const from = source === 'flag' ? '--handler' : source === 'config' ? CONFIG_FILE : 'the default';
  return `handler ${version} (from ${from})`;
}

/** `--db`, `$ONCEQ_DB`, `onceq.config.json` or `the default ./onceq.db`: for messages. */
export function describeSource(source: Source): string {
  return source === 'flag'
    ? '--db'
    : source === 'ONCEQ_DB'
      ? '$ONCEQ_DB'
      : source === 'config'
        ? CONFIG_FILE
        : `the default ${DEFAULT_DB}`;
}

function absolute(target: string, cwd: string): string {
  if (isPostgresUrl(target) || isAbsolute(target) || target === ':memory:') return target;
  return resolve(cwd, target);
}

/**
 * Writes the config file atomically: a temporary file in the same directory, then a
 * rename over `onceq.config.json`. A crash or Ctrl-C leaves the old file or the new one,
 * never half of one. Written with mode 0600 when it holds a database password. Returns the
 * path written.
 */
export async function writeConfig(cwd: string, config: OnceqConfig): Promise<string> {
  const path = join(cwd, CONFIG_FILE);
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  // A config that holds a password is readable by its owner only (0600).
  const mode = config.db !== undefined && hasPassword(config.db) ? 0o600 : 0o644;
  try {
    await writeFile(temp, `${JSON.stringify(config, null, 2)}\n`, { flag: 'wx', mode });
    await chmod(temp, mode); // the umask only narrows: 0644 may have become 0600 or less
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return path;
}

/** A `postgres://` URL with a password in it (user info or a `password=` parameter). */
export function hasPassword(target: string): boolean {
  return isPostgresUrl(target) && redactUrl(target) !== target;
}
