/**
 * `@onceq/core/postgres`: the PostgreSQL driver's helpers. `openStore('postgres://…')`
 * in the root entry is all most applications need; this is for naming the schema,
 * printing a URL safely, and opening a PostgreSQL store explicitly. Needs the package
 * `pg` (an optional peer dependency), loaded only when a store is opened.
 *
 * @module
 */
import type { OpenStoreOptions, Store } from './driver/backend.ts';
import { loadPostgresDriver } from './driver/postgres/load.ts';

export {
  /** Throws unless `name` is a plain lower-case PostgreSQL identifier usable as onceq's schema. */
  assertSchemaName,
  /** The schema onceq's tables live in unless `OpenStoreOptions.schema` says otherwise: `onceq`. */
  DEFAULT_SCHEMA,
} from './driver/postgres/schema-name.ts';
export {
  /** `host:port/database` of a URL, for messages (no user, no password). */
  describeTarget,
  /** The URL with its password replaced by `***`: safe to print or log. */
  redactUrl,
} from './driver/postgres/url.ts';
export {
  /** True for a `postgres://` or `postgresql://` URL. */
  isPostgresUrl,
} from './target.ts';

/**
 * Opens the PostgreSQL store at `url` (what `openStore` does for a `postgres://` URL)
 * and applies pending migrations in `options.schema` (default `onceq`).
 */
export async function openPostgresStore(
  url: string,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const driver = await loadPostgresDriver();
  return driver.openPostgresStore(url, options);
}
