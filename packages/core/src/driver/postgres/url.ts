/**
 * PostgreSQL URLs, made safe to print. A password (in the user info or in a
 * `password=` query parameter) never leaves this module except inside the string that
 * is handed to the driver: every message, location and log line is built from
 * {@link redactUrl} or {@link describeTarget}.
 */

import type { ConnectionOptions } from 'node:tls';
import { OnceqError } from '../../errors.ts';
import { TLS_PARAMETERS, tlsOptions } from './tls.ts';

/** What replaces a password in printable text. */
export const REDACTED = '***';

/** The parts of a PostgreSQL URL that are safe to print. */
export interface PostgresTarget {
  /** Host name, IP literal, or unix socket directory. Default `localhost`. */
  host: string;
  /** Default 5432. */
  port: number;
  /** Default: the user name (as libpq does). */
  database: string;
  /** Default: empty (the driver then uses `$PGUSER` or the OS user). */
  user: string;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * A URL split where its user info ends: at the LAST `@` of the text. A password may
 * hold any character (`/ ? # @ : ' "`, a space, `%`, any letter), written raw or
 * percent-encoded, so no earlier delimiter can be trusted to end it. When an `@` in a
 * query value is the last one, the split takes the host and database into the hidden
 * part: that over-hides, never leaks.
 */
function splitUserInfo(
  url: string,
): { scheme: string; user: string; password: string | null; rest: string } | null {
  const scheme = SCHEME.exec(url)?.[0];
  if (scheme === undefined) return null;
  const body = url.slice(scheme.length);
  const at = body.lastIndexOf('@');
  if (at === -1) return { scheme, user: '', password: null, rest: body };
  const userInfo = body.slice(0, at);
  const colon = userInfo.indexOf(':');
  return {
    scheme,
    user: colon === -1 ? userInfo : userInfo.slice(0, colon),
    password: colon === -1 ? null : userInfo.slice(colon + 1),
    rest: body.slice(at),
  };
}

/**
 * The URL with its password replaced by `***`: in the user info (everything between the
 * first `:` after the scheme's user and the last `@`) and in any query parameter whose
 * name contains `password`. The one redaction of onceq: every place that shows a store
 * (messages, `--version`, logs, the console) goes through it or through
 * {@link describeTarget}. Text that is not a URL gives `***`.
 */
export function redactUrl(url: string): string {
  const parts = splitUserInfo(url);
  if (parts === null) return REDACTED;
  const head =
    parts.password === null
      ? `${parts.scheme}${parts.user}`
      : `${parts.scheme}${parts.user}:${REDACTED}`;
  const tail = parts.rest
    .replace(/([?&;][^=&#]*password[^=&#]*=)[^&#]*/gi, `$1${REDACTED}`)
    // The LISTEN connection's own URL, percent-encoded inside this one.
    .replace(
      /([?&]listen_url=)([^&#]*)/gi,
      (_, name: string, value: string) =>
        `${name}${encodeURIComponent(redactUrl(safeDecode(value)))}`,
    );
  return head + tail;
}

/** The host, port, database and user a URL names, without its password. */
export function parseTarget(url: string): PostgresTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidPostgresUrl(url);
  }
  const user = safeDecode(parsed.username);
  const path = safeDecode(parsed.pathname.replace(/^\//, ''));
  return {
    host: parsed.searchParams.get('host') || parsed.hostname || 'localhost',
    port: Number(parsed.port || parsed.searchParams.get('port') || 5432),
    database: path || parsed.searchParams.get('dbname') || user || 'postgres',
    user,
  };
}

/** `host:port/database`: how messages name a PostgreSQL store. */
export function describeTarget(url: string): string {
  try {
    const t = parseTarget(url);
    return `${t.host}:${t.port}/${t.database}`;
  } catch {
    return redactUrl(url);
  }
}

/**
 * Every spelling of the URL's password (as written and percent-decoded), longest first,
 * so {@link scrub} can remove it from text that came from elsewhere (a driver error).
 */
export function passwordsIn(url: string): string[] {
  const found = new Set<string>();
  const parts = splitUserInfo(url);
  const raws = parts?.password == null ? [] : [parts.password];
  try {
    const parsed = new URL(url);
    const listen = parsed.searchParams.get('listen_url');
    if (listen !== null) for (const nested of passwordsIn(listen)) raws.push(nested);
    raws.push(...queryPasswords(parsed));
  } catch {
    // Not a WHATWG URL (a raw `/` or `#` in the password): the user info above still counts.
  }
  for (const raw of raws) {
    if (raw === '') continue;
    found.add(raw);
    found.add(safeDecode(raw));
  }
  return [...found].filter((p) => p.length > 0).sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of the URL's password replaced by `***`. */
export function scrub(text: string, url: string): string {
  let out = text;
  for (const secret of passwordsIn(url)) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * The URL could not be parsed: a usage error (exit code 2). The message names what is
 * wrong where that can be told without repeating the URL (which may hold a password),
 * and its hint is worded so that no password redaction can garble it.
 */
export class InvalidPostgresUrl extends OnceqError {
  constructor(url = '') {
    const why = malformedBecause(url);
    super(
      'invalid_url',
      2,
      `the PostgreSQL URL is malformed${why === null ? '' : ` (${why})`}: expected postgres://HOST/DATABASE, optionally with USER or USER:PASSWORD and @ before HOST and :PORT after it; write @ : / in the password as %40 %3A %2F`,
    );
  }
}

/** What is visibly wrong with `url`, without quoting any of it; null when unclear. */
function malformedBecause(url: string): string | null {
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const authority = rest.split(/[/?#]/)[0] ?? '';
  if (/\s/.test(url)) return 'it contains a space';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /^(?:\[[^\]]*\]|[^:]*):(.*)$/.exec(hostPort)?.[1];
  if (
    port !== undefined &&
    !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)
  ) {
    return 'the port is not a number from 1 to 65535';
  }
  if (hostPort === '' || hostPort.startsWith(':')) return 'no host';
  if ((authority.match(/@/g) ?? []).length > 1) return 'more than one @ before the host';
  return null;
}

function queryPasswords(parsed: URL): string[] {
  const out: string[] = [];
  for (const [key, value] of parsed.searchParams) {
    if (/password/i.test(key)) out.push(value, encodeURIComponent(value));
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The query parameters onceq reads from a PostgreSQL URL itself (never sent to the server). */
export const ONCEQ_URL_PARAMETERS = ['listen_url', 'pool_max'] as const;

/** What node-postgres gets for one connection (spread into a `Pool` or `Client` config). */
export interface DriverConnection {
  /** The URL without onceq's own parameters and without the TLS parameters. */
  connectionString: string;
  /** TLS as libpq's parameters ask for it, see {@link tlsOptions}; `false`: none. */
  ssl: false | ConnectionOptions;
}

/** A PostgreSQL URL split into what the driver gets and what onceq reads itself. */
export interface ConnectionSettings {
  /** The store's connection for the driver. */
  driver: DriverConnection;
  /**
   * Where the LISTEN connection goes (`?listen_url=`, percent-encoded): a direct
   * connection to the server when the store URL names a pooler in transaction mode.
   * Default: the store URL itself. Its own TLS parameters apply to it.
   */
  listenUrl: string;
  /** Most pooled connections for claims and results (`?pool_max=`). Undefined: the default. */
  poolMax: number | undefined;
}

/**
 * Reads onceq's own parameters (`listen_url`, `pool_max`) and libpq's TLS parameters
 * (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `sslpassword`; else `PGSSLMODE` and
 * the other variables in `env`) off the URL; the driver gets the rest and the TLS
 * options built from them ({@link tlsOptions}), so it neither reinterprets `sslmode` nor
 * prints its warning. Throws {@link InvalidPostgresUrl} for a URL that cannot be parsed,
 * and a usage error naming the parameter for a bad one.
 */
export function connectionSettings(
  url: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConnectionSettings {
  let parsed: URL;
  try {
    parsed = new URL(url);
    parseTarget(url);
  } catch {
    throw new InvalidPostgresUrl(url);
  }
  const listen = parsed.searchParams.get('listen_url');
  const poolMaxText = parsed.searchParams.get('pool_max');
  const ssl = tlsOptions(parsed.searchParams, env);
  for (const name of [...ONCEQ_URL_PARAMETERS, ...Object.keys(TLS_PARAMETERS)]) {
    parsed.searchParams.delete(name);
  }
  let poolMax: number | undefined;
  if (poolMaxText !== null) {
    poolMax = Number(poolMaxText);
    if (!/^\d{1,4}$/.test(poolMaxText) || poolMax < 1) {
      throw new OnceqError(
        'invalid_url',
        2,
        `the PostgreSQL URL's pool_max=${JSON.stringify(poolMaxText).slice(1, -1)} is not a whole number from 1 to 9999`,
      );
    }
  }
  if (listen !== null) {
    try {
      parseTarget(listen);
    } catch {
      throw new OnceqError(
        'invalid_url',
        2,
        "the PostgreSQL URL's listen_url= is not a PostgreSQL URL: write it percent-encoded, e.g. listen_url=postgres%3A%2F%2Fuser%40db-host%3A5432%2Fapp",
      );
    }
    // Its TLS parameters are checked now, not when the worker first listens.
    tlsOptions(new URL(listen).searchParams, env);
  }
  return {
    driver: { connectionString: parsed.toString(), ssl },
    listenUrl: listen ?? url,
    poolMax,
  };
}
