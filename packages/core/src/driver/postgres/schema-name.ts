import { StoreUnavailableError } from '../../errors.ts';

/**
 * PostgreSQL schema names, kept apart from `open.ts` so that importing them (the public
 * API re-exports both) does not load the `pg` driver: a SQLite command never needs it.
 */

/** The schema the tables live in when `options.schema` is not given. */
export const DEFAULT_SCHEMA = 'onceq';

/** A schema name onceq interpolates into SQL: lower-case identifier, at most 63 bytes. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Throws unless `name` is a schema name onceq may interpolate into SQL. */
export function assertSchemaName(name: string): void {
  if (!SCHEMA_NAME.test(name) || name.startsWith('pg_')) {
    throw new StoreUnavailableError(
      `invalid PostgreSQL schema name ${JSON.stringify(name)}: use lower-case letters, digits and _ (not starting with a digit or pg_), at most 63 characters`,
    );
  }
}
