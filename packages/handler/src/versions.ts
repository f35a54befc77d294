/**
 * The handler version names, without the handlers: importing this does not load zod or
 * the rules, so a command that only needs the names (the CLI's config file, `status`)
 * starts faster. The index re-exports all of it.
 */

/** Every handler version, oldest first. */
export const HANDLER_VERSIONS = ['v1', 'v2'] as const;

/** A known handler version name. */
export type HandlerVersion = (typeof HANDLER_VERSIONS)[number];

/** The newest handler version (the usual target of a redrive after a rules fix). */
export const LATEST_HANDLER: HandlerVersion = 'v2';

/** The handler version used when none is given. */
export const DEFAULT_HANDLER: HandlerVersion = 'v1';

/** True if `version` names a known handler version. */
export function isHandlerVersion(version: string): version is HandlerVersion {
  return (HANDLER_VERSIONS as readonly string[]).includes(version);
}
