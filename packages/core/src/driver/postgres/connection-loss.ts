import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { OnceqError } from '../../errors.ts';
import { mapQueryError } from './errors.ts';
import type { ConnectionPool } from './pool.ts';

/**
 * Keeps a lost PostgreSQL connection from crashing the process.
 *
 * node-postgres emits `'error'` on a client whose server connection dies (a restart,
 * `pg_terminate_backend`, a reset socket), and an `'error'` event without a listener is
 * an uncaught exception: Bun prints a code frame and a stack, and the process dies
 * mid-sentence.
 *
 * Every client gets a permanent listener here, as soon as the pool opens it. The
 * listener remembers the first loss; the next query on that client then fails with the
 * driver's "not queryable" error, which {@link ConnectionLossGuard.mapError} turns into
 * one {@link StoreUnavailableError} sentence naming the original cause. A broken client
 * is not reused: the pool drops clients that are no longer queryable on release.
 */
export interface ConnectionLossGuard {
  /** Any error of a query on `client` as onceq reports it (see {@link mapQueryError}). */
  mapError(error: unknown, client?: pg.PoolClient): unknown;
  /** The pool for Kysely's PostgresDialect: same clients, query errors mapped. */
  kyselyPool: PostgresPool;
}

export function guardConnectionLoss(pool: ConnectionPool, url: string): ConnectionLossGuard {
  const losses = new WeakMap<object, unknown>();
  pool.whenConnected((client) => {
    client.on('error', (error) => {
      if (!losses.has(client)) losses.set(client, error);
    });
  });
  // A protocol refusal stays what it is; any other failure on a client whose connection
  // broke is reported by the original cause (not the driver's "not queryable").
  const mapError = (error: unknown, client?: pg.PoolClient) =>
    mapQueryError(
      !(error instanceof OnceqError) && client !== undefined && losses.has(client)
        ? losses.get(client)
        : error,
      url,
    );

  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (wrapper === undefined) {
      wrapper = new Proxy(client, {
        get(target, property) {
          if (property === 'query') {
            return (...args: unknown[]) => {
              const result = (target.query as (...a: unknown[]) => unknown)(...args);
              // A cursor (streaming) is returned as is; a promise gets its error mapped.
              return result instanceof Promise
                ? result.catch((error: unknown) => {
                    throw mapError(error, target);
                  })
                : result;
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }) as unknown as PostgresPoolClient;
      wrappers.set(client, wrapper);
    }
    return wrapper;
  };
  const kyselyPool: PostgresPool = {
    connect: async () => {
      try {
        return wrap(await pool.connect());
      } catch (error) {
        throw mapError(error);
      }
    },
    end: () => pool.end(),
    // Kysely reads the pool's options to open a control connection when a query is cancelled.
    options: pool.options as never,
  };
  return { mapError, kyselyPool };
}
