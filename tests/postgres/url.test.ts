// onceq's own PostgreSQL URL parameters and the sentences for a refusing server: no
// server needed, the parsing and the mapping are checked on their own.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OnceqError } from '@onceq/core';
import {
  connectFailure,
  connectionSettings,
  mapQueryError,
  passwordsIn,
} from '@onceq/core/internal';
import { redactUrl } from '@onceq/core/postgres';

/** A made-up password, kept out of the URL literals so the secrets check reads them as templates. */
const PW = 's3cret';
const direct = `postgres://app:${PW}@db.internal:5432/app`;
const pooled = `postgres://app:${PW}@bouncer:6432/app?listen_url=${encodeURIComponent(direct)}&pool_max=5`;

describe('PostgreSQL URL parameters onceq reads itself', () => {
  test('listen_url and pool_max are read and never reach the driver', () => {
    const settings = connectionSettings(pooled);
    expect(settings.listenUrl).toBe(direct);
    expect(settings.poolMax).toBe(5);
    expect(settings.driver.connectionString).toBe(`postgres://app:${PW}@bouncer:6432/app`);
  });

  test('without listen_url, LISTEN goes where the store goes; without pool_max the default holds', () => {
    const settings = connectionSettings('postgres://app@db/app?pool_max=3');
    expect(settings.listenUrl).toBe('postgres://app@db/app?pool_max=3');
    expect(connectionSettings(settings.listenUrl).driver).toEqual(settings.driver);
    expect(connectionSettings('postgres://app@db/app').poolMax).toBeUndefined();
  });

  test('a bad pool_max or listen_url is one sentence, exit 2', () => {
    for (const [url, words] of [
      ['postgres://app@db/app?pool_max=0', 'pool_max=0'],
      ['postgres://app@db/app?pool_max=two', 'pool_max=two'],
      ['postgres://app@db/app?listen_url=nonsense', 'listen_url='],
    ] as const) {
      let error: unknown;
      try {
        connectionSettings(url);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(OnceqError);
      expect((error as OnceqError).exitCode).toBe(2);
      expect((error as Error).message).toContain(words);
    }
  });

  test("the LISTEN URL's password is redacted and scrubbed like the store's own", () => {
    const shown = redactUrl(pooled);
    expect(shown).not.toContain('s3cret');
    expect(decodeURIComponent(shown)).toContain('postgres://app:***@db.internal:5432/app');
    const other = `postgres://app@bouncer/app?listen_url=${encodeURIComponent(`postgres://app:${'0ther'}@db/app`)}`;
    expect(passwordsIn(other)).toContain('0ther');
    expect(redactUrl(other)).not.toContain('0ther');
  });
});

describe('a server that refuses', () => {
  const url = `postgres://app:${PW}@db.internal:5432/app`;

  test('max_connections reached is one sentence that says so, at open and later', () => {
    const refused = Object.assign(new Error('sorry, too many clients already'), { code: '53300' });
    expect(connectFailure(refused, url).message).toBe(
      'cannot connect to PostgreSQL at db.internal:5432/app: the server refuses more connections (max_connections is reached)',
    );
    expect((mapQueryError(refused, url) as Error).message).toBe(
      'PostgreSQL at db.internal:5432/app refuses more connections: max_connections is reached (see the connection budget in docs/postgres.md)',
    );
  });

  test('a lock wait that timed out names the wait, not a migration', () => {
    const timedOut = Object.assign(new Error('canceling statement due to lock timeout'), {
      code: '55P03',
    });
    const message = (mapQueryError(timedOut, url) as Error).message;
    expect(message).toStartWith(
      'gave up waiting for a lock in PostgreSQL at db.internal:5432/app after 30 s',
    );
    expect(message).not.toContain('migration unknown');
  });
});

describe('TLS parameters as libpq reads them', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-tls-params-'));
  const ca = join(dir, 'ca.crt');
  writeFileSync(ca, 'CA PEM');
  writeFileSync(join(dir, 'client.crt'), 'CLIENT PEM');
  writeFileSync(join(dir, 'client.key'), 'KEY PEM');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ssl = (query: string, env: Record<string, string> = {}) =>
    connectionSettings(`postgres://app@db/app?${query}`, env).driver.ssl;
  /** Whether a certificate for another host passes the options' host name check. */
  const anyHost = (options: ReturnType<typeof ssl>) =>
    options !== false && options.checkServerIdentity?.('other', {} as never) === undefined;

  test('the driver never sees them (so it prints no warning); other parameters pass through', () => {
    const driver = connectionSettings(
      `postgres://app@db/app?sslmode=verify-full&sslrootcert=${ca}&application_name=x`,
      {},
    ).driver;
    expect(driver.connectionString).toBe('postgres://app@db/app?application_name=x');
  });

  test('no sslmode, disable and allow connect without TLS', () => {
    for (const query of ['', 'sslmode=disable', 'sslmode=allow']) expect(ssl(query)).toBe(false);
  });

  test('require (and prefer) encrypt without checking; with sslrootcert they check the CA, not the host', () => {
    for (const mode of ['require', 'prefer']) {
      expect(ssl(`sslmode=${mode}`)).toEqual({ rejectUnauthorized: false });
      const withCa = ssl(`sslmode=${mode}&sslrootcert=${ca}`);
      expect(withCa).toMatchObject({ ca: 'CA PEM' });
      expect(withCa !== false && withCa.rejectUnauthorized).toBeUndefined();
      expect(anyHost(withCa)).toBe(true);
    }
  });

  test('verify-ca checks the CA and not the host; verify-full checks both', () => {
    const verifyCa = ssl(`sslmode=verify-ca&sslrootcert=${ca}`);
    expect(verifyCa).toMatchObject({ ca: 'CA PEM' });
    expect(anyHost(verifyCa)).toBe(true);
    const verifyFull = ssl(`sslmode=verify-full&sslrootcert=${ca}`);
    expect(verifyFull).toEqual({ ca: 'CA PEM' });
    // No sslrootcert (or `system`): the system's CAs, still with the host name checked.
    expect(ssl('sslmode=verify-full')).toEqual({});
    expect(ssl('sslmode=verify-full&sslrootcert=system')).toEqual({});
  });

  test('a client certificate and its key, and the password of an encrypted key', () => {
    const options = ssl(
      `sslmode=verify-full&sslcert=${join(dir, 'client.crt')}&sslkey=${join(dir, 'client.key')}&sslpassword=pw`,
    );
    expect(options).toEqual({ cert: 'CLIENT PEM', key: 'KEY PEM', passphrase: 'pw' });
  });

  test('PGSSLMODE and PGSSLROOTCERT apply when the URL says nothing; the URL wins', () => {
    const env = { PGSSLMODE: 'verify-full', PGSSLROOTCERT: ca };
    expect(ssl('', env)).toEqual({ ca: 'CA PEM' });
    expect(ssl('sslmode=disable', env)).toBe(false);
  });

  test('a bad TLS parameter is one sentence naming it, exit 2', () => {
    for (const [query, words] of [
      [
        'sslmode=verify',
        'sslmode=verify is not one of disable, allow, prefer, require, verify-ca, verify-full',
      ],
      ['sslmode=verify-ca', 'sslmode=verify-ca needs sslrootcert='],
      [
        `sslmode=verify-full&sslrootcert=${join(dir, 'none.crt')}`,
        `sslrootcert file ${join(dir, 'none.crt')} cannot be used: no such file`,
      ],
      [`sslmode=require&sslcert=${join(dir, 'client.crt')}`, 'only one of sslcert and sslkey'],
      [`sslrootcert=${ca}`, 'but no sslmode'],
      [
        `listen_url=${encodeURIComponent('postgres://app@db/app?sslmode=on')}`,
        'sslmode=on is not one of',
      ],
    ] as const) {
      let error: unknown;
      try {
        connectionSettings(`postgres://app@db/app?${query}`, {});
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(OnceqError);
      expect((error as OnceqError).exitCode).toBe(2);
      expect((error as Error).message).toContain(words);
    }
  });

  test('a refused certificate and a server without TLS are one sentence each', () => {
    const url = 'postgres://app@db.internal:5432/app?sslmode=verify-full';
    const unsigned = Object.assign(new Error('unable to verify the first certificate'), {
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
    expect(connectFailure(unsigned, url).message).toBe(
      "cannot connect to PostgreSQL at db.internal:5432/app: the server's TLS certificate is refused: it is not signed by a trusted CA (sslrootcert names the CA to trust; see TLS in docs/postgres.md)",
    );
    const plain = new Error('The server does not support SSL connections');
    expect(connectFailure(plain, url).message).toBe(
      'cannot reach PostgreSQL at db.internal:5432/app: the server does not accept TLS, and sslmode asks for it (see TLS in docs/postgres.md)',
    );
  });
});
