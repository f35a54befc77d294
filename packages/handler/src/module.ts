/**
 * Your own handler as a module: `onceq worker --handler ./my-handler.ts` (also `work`,
 * `complete`, `redrive --dry-run`). A TypeScript or JavaScript module that exports
 *
 * - `version`: a name for this handler (printed and logged, like `v1`/`v2`), and
 * - `handle(payload, { eventId, attempt, generation, signal })`: returns the effect
 *   `{ category, amountCents }` or a completion `{ write(tx), summary? }` writing rows of
 *   its own in the ACK's transaction (docs/handlers.md), sync or as a Promise, or throws
 *   `PermanentFailure(code, …)` (straight to the DLQ) / `TemporaryFailure(code, …)`
 *   (retried with backoff); anything else thrown counts as a temporary `handler_error`.
 *
 * (Or a default export `{ version, handle }`.) See examples/handler/ for one, tested.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { type Handler, OnceqError } from '@onceq/core';

/** What a handler module exports. */
export interface HandlerModule {
  /** A short name for logs and output, e.g. `tips-v1`. */
  readonly version: string;
  readonly handle: Handler;
}

/** The module at `--handler` could not be used: a usage error (exit code 2). */
export class HandlerModuleError extends OnceqError {
  constructor(message: string, options?: ErrorOptions) {
    super('handler_module', 2, message, options);
  }
}

/** True when `spec` names a module file rather than a built-in version (`v1`, `v2`). */
export function isHandlerPath(spec: string): boolean {
  return /[\\/]/.test(spec) || /\.(m?[jt]s|[jt]sx)$/.test(spec);
}

/**
 * Imports the handler module at `spec` (relative to `cwd`) and checks its exports.
 * Throws {@link HandlerModuleError} naming the file and what is wrong with it.
 */
export async function loadHandlerModule(spec: string, cwd: string): Promise<HandlerModule> {
  const path = isAbsolute(spec) ? spec : resolve(cwd, spec);
  if (!existsSync(path)) throw new HandlerModuleError(`--handler ${spec}: no such file`);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(path)) as Record<string, unknown>;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new HandlerModuleError(`--handler ${spec}: the module failed to load: ${why}`, {
      cause: error,
    });
  }
  const source =
    typeof loaded.handle === 'function'
      ? loaded
      : typeof loaded.default === 'object' && loaded.default !== null
        ? (loaded.default as Record<string, unknown>)
        : loaded;
  const { version, handle } = source;
  if (typeof handle !== 'function') {
    throw new HandlerModuleError(
      `--handler ${spec}: the module must export a function handle(payload, context)`,
    );
  }
  if (typeof version !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(version)) {
    throw new HandlerModuleError(
      `--handler ${spec}: the module must export version, 1-64 letters, digits, _ . or -`,
    );
  }
  return { version, handle: handle as Handler };
}
