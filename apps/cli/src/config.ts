import { existsSync, readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { isPostgresUrl } from '@onceq/core';
import {
  DEFAULT_HANDLER,
  HANDLER_VERSIONS,
  type HandlerVersion,
  isHandlerVersion,
} from '@onceq/handler';
import { UsageError } from './errors.ts';

/** The config file, read from (and written by `setup` to) the current directory. */
export const CONFIG_FILE = 'onceq.config.json';

/** The store used when no flag, `ONCEQ_DB` or config names one. */
export const DEFAULT_DB = './onceq.db';

/** What `onceq.config.json` may hold. Both keys are optional; no other key is allowed. */
export interface OnceqConfig {
  /** A SQLite file (relative to the config file's directory) or a `postgres://` URL. */
  db?: string;
  /** The handler version `work`, `complete` and `redrive --dry-run` use by default. */
  handler?: HandlerVersion;
}

const CONFIG_KEYS = ['db', 'handler'];

/**
 * Reads `onceq.config.json` in `cwd`: `{}` when there is none. A file that is not a JSON
 * object of the known keys is a usage error (exit 2) naming the file.
 */
export function readConfig(cwd: string): OnceqConfig {
  const path = join(cwd, CONFIG_FILE);
  if (!existsSync(path)) return {};
  const bad = (why: string) => new UsageError(`invalid config file ${path}: ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw bad(error instanceof SyntaxError ? `not valid JSON (${error.message})` : String(error));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('expected a JSON object like {"db": "./onceq.db", "handler": "v1"}');
  }
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !CONFIG_KEYS.includes(key));
  if (unknown.length > 0) {
    throw bad(`unknown key ${JSON.stringify(unknown[0])} (known: ${CONFIG_KEYS.join(', ')})`);
  }
  const config: OnceqConfig = {};
  if (record.db !== undefined) {
    if (typeof record.db !== 'string' || record.db.trim() === '') {
      throw bad('"db" must be a non-empty string');
    }
    config.db = record.db;
  }
  if (record.handler !== undefined) {
    if (typeof record.handler !== 'string' || !isHandlerVersion(record.handler)) {
      throw bad(`"handler" must be one of ${HANDLER_VERSIONS.join(', ')}`);
    }
    config.handler = record.handler;
  }
  return config;
}

/** Reads the config file at most once, and only if a value is actually needed from it. */
export function lazyConfig(cwd: string): () => OnceqConfig {
  let config: OnceqConfig | undefined;
  return () => {
    config ??= readConfig(cwd);
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

/** The handler version: `--handler` > config `handler` > `v1`. */
export function resolveHandler(
  flag: string | undefined,
  config: () => OnceqConfig,
): HandlerVersion {
  if (flag !== undefined) {
    if (!isHandlerVersion(flag)) {
      throw new UsageError(
        `--handler must be one of ${HANDLER_VERSIONS.join(', ')}, got ${JSON.stringify(flag)}`,
      );
    }
    return flag;
  }
  return config().handler ?? DEFAULT_HANDLER;
}

function absolute(target: string, cwd: string): string {
  if (isPostgresUrl(target) || isAbsolute(target) || target === ':memory:') return target;
  return resolve(cwd, target);
}

/** The password in a `postgres://user:password@host/db` URL, to keep out of every message. */
export function passwordOf(target: string): string[] {
  if (!isPostgresUrl(target)) return [];
  try {
    const password = decodeURIComponent(new URL(target).password);
    return password === '' ? [] : [password, new URL(target).password];
  } catch {
    return [];
  }
}

/**
 * Writes the config file atomically: a temporary file in the same directory, then a
 * rename over `onceq.config.json`. A crash or Ctrl-C leaves the old file or the new one,
 * never half of one. Returns the path written.
 */
export async function writeConfig(cwd: string, config: OnceqConfig): Promise<string> {
  const path = join(cwd, CONFIG_FILE);
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    await writeFile(temp, `${JSON.stringify(config, null, 2)}\n`, { flag: 'wx' });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return path;
}
