/**
 * `@onceq/console`: the web console (overview, messages, dead letters and redrive) served
 * by `Bun.serve` from the same process as the store. Server-rendered HTML, one small
 * script and one stylesheet embedded as strings: nothing to build, nothing fetched.
 *
 * @module
 */
import { type Handler, OnceqError, type Store } from '@onceq/core';
import { listenAlone, printable } from '@onceq/core/internal';
import { handlers as builtInHandlers, LATEST_HANDLER } from '@onceq/handler';
import { bareRefusal, consoleFetch } from './app.ts';
import type { ConsoleState } from './context.ts';
import {
  hostNamesOf,
  isLoopback,
  randomToken,
  Sessions,
  SignInLimiter,
  tokenProblem,
} from './security.ts';
import { Throughput } from './throughput.ts';

export { MAX_SELECTION } from './pages/redrive.ts';
export { isLoopback, MIN_TOKEN, tokenProblem } from './security.ts';

/** Where the console listens when no host is given: this machine only. */
export const DEFAULT_HOST = '127.0.0.1';
/** The port when none is given. */
export const DEFAULT_PORT = 7373;

export interface ConsoleOptions {
  store: Store;
  /** Default {@link DEFAULT_HOST}. */
  host?: string;
  /** Default {@link DEFAULT_PORT}; 0 picks a free port. */
  port?: number;
  /** Allow redrives (after sign-in with the token). Default false: read-only. */
  allowWrites?: boolean;
  /**
   * The operator's token (`--token` / `ONCEQ_CONSOLE_TOKEN`). When set, every page
   * needs it; when not set and writes are allowed, a random one is made for writes.
   */
  token?: string | null;
  /** Payload field names to show as "(hidden)", at any depth. Default none. */
  hideFields?: readonly string[];
  /**
   * Handlers a preview may run, by name. Default the built-in v1 and v2. This is the
   * seam for handler modules: pass `{ ...handlers, mine: loaded }`.
   */
  handlers?: Readonly<Record<string, Handler>>;
  /** The handler the preview form selects first. Default the newest built-in (v2). */
  defaultHandler?: string;
  /** Where each write (and each sign-in) is logged. Default: a line on stderr. */
  log?: (line: string) => void;
}

export interface RunningConsole {
  /** `http://host:port` as bound (the real port when 0 was asked). */
  url: string;
  /** The sign-in token, or null for a read-only console without one. */
  token: string | null;
  /** True when the console made the token (print it once). */
  tokenGenerated: boolean;
  /** Loud warnings for the operator (bound beyond this machine without a token). */
  warnings: string[];
  stop(): Promise<void>;
}

/** The operator token is too easy to guess (see {@link tokenProblem}). Exit code 2. */
export class WeakTokenError extends OnceqError {
  constructor(message: string) {
    super('weak_token', 2, message);
  }
}

/**
 * Starts the console; resolves once it listens. Stop it with `stop()`.
 * @throws ListenRefusedError when another process holds the port (never shared).
 */
export function startConsole(options: ConsoleOptions): RunningConsole {
  const host = options.host ?? DEFAULT_HOST;
  const allowWrites = options.allowWrites ?? false;
  const operatorToken = options.token ?? null;
  const weakness = operatorToken === null ? null : tokenProblem(operatorToken);
  if (weakness !== null) throw new WeakTokenError(`the console token ${weakness}`);
  const token = operatorToken ?? (allowWrites ? randomToken() : null);
  const handlers = options.handlers ?? builtInHandlers;
  const state: ConsoleState = {
    store: options.store,
    allowWrites,
    token,
    tokenForReads: operatorToken !== null,
    hideFields: new Set(options.hideFields ?? []),
    handlers,
    defaultHandler:
      options.defaultHandler ??
      (Object.hasOwn(handlers, LATEST_HANDLER)
        ? LATEST_HANDLER
        : (Object.keys(handlers)[0] ?? LATEST_HANDLER)),
    hostNames: isLoopback(host) ? hostNamesOf(host) : null,
    sessions: new Sessions(),
    signIns: new SignInLimiter(options.store.clock),
    throughput: new Throughput(),
    log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
  };
  const handle = consoleFetch(state);
  // Never Bun's development page (working directory, source lines) for a request that
  // breaks something: a plain 500 that says where the details went.
  const server = listenAlone(
    {
      hostname: host,
      port: options.port ?? DEFAULT_PORT,
      maxRequestBodySize: 1_000_000,
      development: false,
      fetch: (req, srv) => handle(req, srv.requestIP(req)?.address ?? 'unknown'),
      error: (error) => {
        state.log(`onceq console: internal error: ${printable(error.message)}`);
        return bareRefusal(500, 'Internal error: the console logged it on its standard error.');
      },
    },
    '--port',
  );
  const warnings: string[] = [];
  if (state.hostNames === null && operatorToken === null) {
    warnings.push(
      `WARNING: the console listens on ${host}, reachable from other machines, and has no token: anyone who can reach it can read every payload.`,
      'WARNING: set one with --token or ONCEQ_CONSOLE_TOKEN, or bind to 127.0.0.1 (the default).',
    );
  }
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${server.port}`,
    token,
    tokenGenerated: token !== null && operatorToken === null,
    warnings,
    stop: () => server.stop(true),
  };
}
