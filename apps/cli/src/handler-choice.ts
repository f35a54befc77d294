import type { AsyncHandler, Handler } from '@onceq/core';
import { getHandler, isHandlerPath, loadHandlerModule } from '@onceq/handler';
import type { OnceqConfig } from './config.ts';
import { resolveHandler } from './config.ts';

/**
 * The handler a command runs: a built-in version (`v1`, `v2`: sync, run inside the apply
 * transaction as before) or your own module (`--handler ./my-handler.ts`: possibly
 * async, run outside the transaction and recorded with a fenced ACK).
 */
export type HandlerChoice =
  | { kind: 'builtin'; name: string; handler: Handler }
  | { kind: 'module'; name: string; path: string; handler: AsyncHandler };

/** `--handler` (or the config's `handler`, or v1) resolved and, for a module, imported. */
export async function chooseHandler(
  flag: string | undefined,
  config: () => OnceqConfig,
  cwd: string,
): Promise<HandlerChoice> {
  if (flag !== undefined && isHandlerPath(flag)) {
    const loaded = await loadHandlerModule(flag, cwd);
    return { kind: 'module', name: loaded.version, path: flag, handler: loaded.handle };
  }
  const version = resolveHandler(flag, config);
  return { kind: 'builtin', name: version, handler: getHandler(version) };
}

/** The `--handler` line of a command's help. */
export const HANDLER_FLAG_HELP: [string, string] = [
  '--handler <v1|v2|./file.ts>',
  'handler version, or your own module (default: config "handler", then v1)',
];
