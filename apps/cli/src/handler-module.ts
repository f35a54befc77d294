/**
 * Your own handler as a module: `onceq worker --handler ./my-handler.ts` (also `work`,
 * `complete`, `redrive --dry-run`, `redrive --accepted-by`, or `"handler"` in
 * onceq.config.json). A TypeScript or JavaScript module that exports `version` (a name
 * for logs and output) and `handle(payload, context)`, or a default export
 * `{ version, handle }`. The contract is docs/handlers.md's.
 *
 * The module may import the SDK, `@onceq/core` (its failures and types) and the lesson's
 * rules, `@onceq/handler`: both are served from inside this process, the compiled binary
 * included, whatever the module's own directory holds. So a module runs the same from
 * any directory with nothing installed beside it, and a copy of `@onceq/core` installed
 * next to it (for its types) is never loaded twice. Failures are recognised by their
 * brand anyway (`Symbol.for('onceq.failure')`), so a module that throws its own branded
 * objects needs no import at all.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Handler } from '@onceq/core';
import * as core from '@onceq/core';
import * as rules from '@onceq/handler';
import { UsageError } from './errors.ts';

/** What a handler module exports. */
export interface HandlerModule {
  /** A short name for logs and output, e.g. `tips-v1`. */
  readonly version: string;
  readonly handle: Handler;
}

/** The specifiers a handler module may import that this process serves itself. */
export const SERVED_MODULES = ['@onceq/core', '@onceq/handler'] as const;

/** True when `spec` names a module file rather than a built-in version (`v1`, `v2`). */
export function isHandlerPath(spec: string): boolean {
  return /[\\/]/.test(spec) || /\.(m?[jt]s|[jt]sx)$/.test(spec);
}

let served = false;

/**
 * Registers `@onceq/core` and `@onceq/handler` as modules of this process, so a handler
 * module's imports of them resolve here (in the compiled binary a package on disk whose
 * exports point at `.ts` cannot be loaded, and a second copy would be a second SDK).
 * The namespaces are this file's own imports: inside the plugin an `import()` of either
 * name would resolve to the plugin's module itself.
 */
function serveSdk(): void {
  if (served) return;
  served = true;
  Bun.plugin({
    name: 'onceq-sdk',
    setup(build) {
      build.module('@onceq/core', () => ({ exports: { ...core }, loader: 'object' }));
      build.module('@onceq/handler', () => ({ exports: { ...rules }, loader: 'object' }));
    },
  });
}

/**
 * Imports the handler module at `spec` (relative to `base`: the working directory for a
 * flag, the config file's directory for `"handler"` in onceq.config.json) and checks its
 * exports. A usage error (exit 2) names `label` (the flag or the config key), the file
 * and what is wrong with it.
 */
export async function loadHandlerModule(
  spec: string,
  base: string,
  label = '--handler',
): Promise<HandlerModule> {
  const path = isAbsolute(spec) ? spec : resolve(base, spec);
  const at = `${label} ${spec}`;
  if (!existsSync(path)) throw new UsageError(`${at}: no such file`);
  serveSdk();
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(path)) as Record<string, unknown>;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${at}: the module failed to load: ${why}`);
  }
  const source =
    typeof loaded.handle === 'function'
      ? loaded
      : typeof loaded.default === 'object' && loaded.default !== null
        ? (loaded.default as Record<string, unknown>)
        : loaded;
  const { version, handle } = source;
  if (typeof handle !== 'function') {
    throw new UsageError(`${at}: the module must export a function handle(payload, context)`);
  }
  if (typeof version !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(version)) {
    throw new UsageError(`${at}: the module must export version, 1-64 letters, digits, _ . or -`);
  }
  return { version, handle: handle as Handler };
}
