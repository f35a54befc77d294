import {
  OnceqError,
  StorageError,
  type StorageFault,
  StoreUnavailableError,
} from '../../errors.ts';
import { LOCK_TIMEOUT_MS } from './schema-scope.ts';
import { describeTarget, scrub } from './url.ts';

/**
 * How long a query waits for a pooled connection (node-postgres' `connectionTimeoutMillis`):
 * for a new connection to open, or, when all `pool_max` are checked out, for one to
 * come back.
 */
export const POOL_WAIT_MS = 10_000;

/** What a driver or server error looks like from here: a Node-style or SQLSTATE `code`. */
interface DriverError {
  code?: unknown;
  message?: unknown;
  errors?: unknown;
}

/** Socket-level failures: the server was never reached (or went away). */
const NETWORK_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ENOENT: 'no server socket at that path',
};

/**
 * TLS verification failures (Node's codes): the server answered, but its certificate
 * is not one the URL's `sslmode` and `sslrootcert` accept.
 */
const CERTIFICATE_REASONS: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'it is not signed by a trusted CA',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'it is not signed by a trusted CA',
  UNABLE_TO_GET_ISSUER_CERT: 'it is not signed by a trusted CA',
  SELF_SIGNED_CERT_IN_CHAIN: 'it is not signed by a trusted CA',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'it is self-signed',
  CERT_HAS_EXPIRED: 'it has expired',
  CERT_NOT_YET_VALID: 'it is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'it is not issued for that host name',
};

/**
 * SQLSTATEs (and driver messages) after which the connection, not the statement, is
 * the problem: class 08 (connection exception), 57P01-03 (shutdown, cannot connect now).
 */
function isConnectionLoss(code: string, message: string): boolean {
  return (
    code in NETWORK_REASONS ||
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    // node-postgres' own words for a socket that closed, and for a client whose
    // connection broke earlier (its 'error' event) and that refuses further queries.
    /connection terminated|timeout expired|connection timeout|not queryable|connection (?:is )?closed/i.test(
      message,
    )
  );
}

function codeOf(error: unknown): string {
  const e = error as DriverError | null;
  if (e && typeof e.code === 'string') return e.code;
  // Bun and Node report a refused dual-stack connect as an AggregateError of attempts.
  if (e && Array.isArray(e.errors) && e.errors.length > 0) return codeOf(e.errors[0]);
  return '';
}

function messageOf(error: unknown): string {
  const e = error as DriverError | null;
  const message = e && typeof e.message === 'string' ? e.message : String(error);
  // One sentence: the first line, without a trailing period.
  return (message.split('\n')[0] ?? '').trim().replace(/\.$/, '');
}

/** node-postgres' words when the server asks for a SCRAM password and the URL has none. */
function asksForPassword(error: unknown): boolean {
  return /client password must be a string/i.test(messageOf(error));
}

/** The reason part of a connection failure, in a few words, without any password. */
function reasonOf(error: unknown, url: string): string {
  const code = codeOf(error);
  const network = NETWORK_REASONS[code];
  if (network !== undefined) return network;
  const certificate = CERTIFICATE_REASONS[code];
  if (certificate !== undefined) {
    return `the server's TLS certificate is refused: ${certificate} (sslrootcert names the CA to trust; see TLS in docs/postgres.md)`;
  }
  if (/server does not support SSL/i.test(messageOf(error))) {
    return 'the server does not accept TLS, and sslmode asks for it (see TLS in docs/postgres.md)';
  }
  if (/timeout/i.test(messageOf(error))) return 'connection timed out';
  if (code === '28P01') return 'password authentication failed';
  if (asksForPassword(error)) {
    return 'the server asks for a password and the URL has none; set it in ONCEQ_DB or ~/.pgpass';
  }
  if (code === '53300') return 'the server refuses more connections (max_connections is reached)';
  return scrub(messageOf(error), url) || 'unknown error';
}

/**
 * A failure to connect at open, as one sentence naming host, port and database, never
 * the password: `cannot reach PostgreSQL at 127.0.0.1:5999/onceq_test: connection refused`.
 */
export function connectFailure(error: unknown, url: string): StoreUnavailableError {
  const code = codeOf(error);
  const reached = !(code in NETWORK_REASONS || code === '') || asksForPassword(error);
  const verb = reached ? 'cannot connect to' : 'cannot reach';
  return new StoreUnavailableError(
    `${verb} PostgreSQL at ${describeTarget(url)}: ${reasonOf(error, url)}`,
    { cause: error },
  );
}

/**
 * True when the server is there but has no connection to give now: `max_connections`
 * (or a role's or database's connection limit) reached, the server starting up, or a
 * server too busy to answer within the connect timeout. Trying again later can work;
 * a wrong host, port, password or certificate never will.
 */
export function isServerBusy(error: unknown): boolean {
  const code = codeOf(error);
  if (code === '53300' || code === '57P03') return true;
  return (code === '' || code === 'ETIMEDOUT') && /timeout|timed out/i.test(messageOf(error));
}

/**
 * SQLSTATEs that say the server's storage refused the write: 53100 `disk_full` (no space
 * left for a table, index or the WAL), 58030 `io_error`. The server rolled the
 * transaction back, so they read as SQLite's full disk does: one sentence, nothing written.
 */
const STORAGE_SQLSTATES: Readonly<Record<string, StorageFault>> = {
  '53100': 'disk_full',
  '58030': 'io_error',
};

/**
 * Maps an error thrown by a query after open: a lost connection becomes a
 * {@link StoreUnavailableError} sentence, a full or failing disk a {@link StorageError};
 * every other error is returned as it was
 * (protocol errors, constraint violations) with any password scrubbed from its message.
 */
export function mapQueryError(error: unknown, url: string): unknown {
  // Already one of ours (mapped deeper down, or a protocol refusal): keep it.
  if (error instanceof OnceqError) return error;
  const code = codeOf(error);
  // pg-pool's words when every pooled connection stayed checked out for POOL_WAIT_MS.
  if (/timeout exceeded when trying to connect/i.test(messageOf(error))) {
    return new StoreUnavailableError(
      `no pooled connection to PostgreSQL at ${describeTarget(url)} came free within ${POOL_WAIT_MS / 1000} s: all of this process's connections stayed busy (raise ?pool_max= or lower --concurrency; see the connection budget in docs/postgres.md)`,
      { cause: error },
    );
  }
  if (isConnectionLoss(code, messageOf(error))) {
    return new StoreUnavailableError(
      `lost the connection to PostgreSQL at ${describeTarget(url)}: ${reasonOf(error, url)}`,
      { cause: error },
    );
  }
  if (code === '53300') {
    return new StoreUnavailableError(
      `PostgreSQL at ${describeTarget(url)} refuses more connections: max_connections is reached (see the connection budget in docs/postgres.md)`,
      { cause: error },
    );
  }
  if (code === '55P03') {
    return new StoreUnavailableError(
      `gave up waiting for a lock in PostgreSQL at ${describeTarget(url)} after ${LOCK_TIMEOUT_MS / 1000} s: another session holds it (a migration, doctor --fix or a long transaction); try again when it ends`,
      { cause: error },
    );
  }
  const fault = STORAGE_SQLSTATES[code];
  if (fault !== undefined) {
    return new StorageError(fault, `PostgreSQL at ${describeTarget(url)}`, { cause: error });
  }
  if (error instanceof Error) {
    const clean = scrub(error.message, url);
    if (clean !== error.message) error.message = clean;
  }
  return error;
}

/**
 * SQLSTATEs after which re-running the whole transaction is correct and likely to
 * succeed: a deadlock or serialization failure (PostgreSQL rolled back one side), or a
 * unique key a concurrent transaction committed first (the re-run reads its row, so an
 * enqueue counts a duplicate instead of failing).
 */
export function isRetryable(error: unknown): boolean {
  const code = codeOf(error);
  return code === '40P01' || code === '40001' || code === '23505';
}

/** The statement named a table (42P01) or a column (42703) the database does not have. */
export function isMissingTableOrColumn(error: unknown): boolean {
  const code = codeOf(error);
  return code === '42P01' || code === '42703';
}

/**
 * The server does not know a named statement the driver believes it prepared
 * (26000), or already has one of that name (42P05): a pooler in transaction mode handed
 * this client another server connection. Nothing ran; the statement can run unnamed.
 */
export function isLostPreparedStatement(error: unknown): boolean {
  const code = codeOf(error);
  return code === '26000' || code === '42P05';
}
