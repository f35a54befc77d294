/**
 * libpq's TLS parameters turned into node-postgres' `ssl` option. onceq reads them
 * itself (and removes them from the URL the driver parses) so each `sslmode` means what
 * it means to libpq, the driver never prints its own warning, and a certificate file that
 * cannot be read is one sentence instead of a driver stack.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { OnceqError } from '../../errors.ts';

/** The `sslmode` values libpq knows, weakest first. */
export const SSL_MODES = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
] as const;
export type SslMode = (typeof SSL_MODES)[number];

/**
 * The TLS parameters read from the URL, each with the environment variable libpq reads
 * when the URL does not set it (`sslpassword` has none).
 */
export const TLS_PARAMETERS = {
  sslmode: 'PGSSLMODE',
  sslrootcert: 'PGSSLROOTCERT',
  sslcert: 'PGSSLCERT',
  sslkey: 'PGSSLKEY',
  sslpassword: null,
} as const;

type TlsParameter = keyof typeof TLS_PARAMETERS;
type Env = Readonly<Record<string, string | undefined>>;

function invalid(message: string): OnceqError {
  return new OnceqError('invalid_url', 2, message);
}

/**
 * node-postgres' `ssl` option for the TLS parameters in `params` (else in `env`):
 *
 * - no `sslmode`, `disable`, `allow`: no TLS (`allow` is plain first in libpq too);
 * - `prefer`, `require`: encrypted, the certificate not checked; with `sslrootcert`
 *   checked against that CA, the host name not (libpq's rule);
 * - `verify-ca`: checked against `sslrootcert` (required), the host name not;
 * - `verify-full`: checked against `sslrootcert`, or the system's CAs when it is absent
 *   or `system`, and the host name against the certificate's names.
 *
 * `sslcert` and `sslkey` (a client certificate) go together; `sslpassword` unlocks an
 * encrypted key. Files are PEM. Throws a usage error (exit 2) naming the parameter for an
 * unknown `sslmode`, a file that cannot be read, or a combination libpq would refuse.
 */
export function tlsOptions(params: URLSearchParams, env: Env): false | ConnectionOptions {
  const value = (name: TlsParameter): string | null => {
    const envName = TLS_PARAMETERS[name];
    const found = params.get(name) ?? (envName === null ? undefined : env[envName]);
    return found === undefined || found === '' ? null : found;
  };
  const modeText = value('sslmode');
  const rootcert = value('sslrootcert');
  const cert = value('sslcert');
  const key = value('sslkey');
  if (modeText === null) {
    if (rootcert !== null || cert !== null || key !== null) {
      throw invalid(
        'the PostgreSQL URL names TLS files (sslrootcert, sslcert or sslkey) but no sslmode: add sslmode=verify-full (or require, verify-ca)',
      );
    }
    return false;
  }
  if (!(SSL_MODES as readonly string[]).includes(modeText)) {
    throw invalid(
      `the PostgreSQL URL's sslmode=${JSON.stringify(modeText).slice(1, -1)} is not one of ${SSL_MODES.join(', ')}`,
    );
  }
  const mode = modeText as SslMode;
  if (mode === 'disable' || mode === 'allow') return false;

  const options: ConnectionOptions = {};
  if (rootcert !== null && rootcert !== 'system') options.ca = readPem('sslrootcert', rootcert);
  if ((cert === null) !== (key === null)) {
    throw invalid(
      'the PostgreSQL URL names only one of sslcert and sslkey: a client certificate needs both',
    );
  }
  if (cert !== null && key !== null) {
    options.cert = readPem('sslcert', cert);
    options.key = readPem('sslkey', key);
  }
  const password = value('sslpassword');
  if (password !== null) options.passphrase = password;

  // The host name is checked by default (verify-full); the weaker modes switch parts off.
  const anyHost = () => undefined;
  if (mode === 'prefer' || mode === 'require') {
    if (options.ca === undefined) options.rejectUnauthorized = false;
    else options.checkServerIdentity = anyHost;
  } else if (mode === 'verify-ca') {
    if (options.ca === undefined) {
      throw invalid(
        "the PostgreSQL URL's sslmode=verify-ca needs sslrootcert= naming the CA certificate (PEM) that signed the server's",
      );
    }
    options.checkServerIdentity = anyHost;
  }
  return options;
}

function readPem(parameter: TlsParameter, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : 'it cannot be read';
    throw invalid(`the PostgreSQL URL's ${parameter} file ${path} cannot be used: ${why}`);
  }
}
