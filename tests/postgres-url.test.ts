// onceq's own PostgreSQL URL parameters and the sentences for a refusing server: no
// server needed, the parsing and the mapping are checked on their own.
import { describe, expect, test } from 'bun:test';
import { connectFailure, mapQueryError } from '../packages/core/src/driver/postgres/errors.ts';
import {
  connectionSettings,
  passwordsIn,
  redactUrl,
} from '../packages/core/src/driver/postgres/url.ts';
import { OnceqError } from '../packages/core/src/errors.ts';

/** A made-up password, kept out of the URL literals so the secrets check reads them as templates. */
const PW = 's3cret';
const direct = `postgres://app:${PW}@db.internal:5432/app`;
const pooled = `postgres://app:${PW}@bouncer:6432/app?listen_url=${encodeURIComponent(direct)}&pool_max=5`;

describe('PostgreSQL URL parameters onceq reads itself', () => {
  test('listen_url and pool_max are read and never reach the driver', () => {
    const settings = connectionSettings(pooled);
    expect(settings.listenUrl).toBe(direct);
    expect(settings.poolMax).toBe(5);
    expect(settings.driverUrl).toBe(`postgres://app:${PW}@bouncer:6432/app`);
  });

  test('without listen_url, LISTEN goes where the store goes; without pool_max the default holds', () => {
    const settings = connectionSettings('postgres://app@db/app');
    expect(settings.listenUrl).toBe(settings.driverUrl);
    expect(settings.poolMax).toBeUndefined();
  });

  test('sslmode keeps its libpq meaning (no driver warning): the driver is told so', () => {
    const url = new URL(connectionSettings('postgres://app@db/app?sslmode=require').driverUrl);
    expect(url.searchParams.get('sslmode')).toBe('require');
    expect(url.searchParams.get('uselibpqcompat')).toBe('true');
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
