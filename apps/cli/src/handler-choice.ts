import type { Handler } from '@onceq/core';
import type { OnceqConfig } from './config.ts';
import { describeHandler, type HandlerSource, resolveHandlerSource } from './config.ts';

/**
 * The handler a command runs: a built-in version (`v1`, `v2`) or your own module
 * (`--handler ./my-handler.ts`); either runs outside any transaction and its result is
 * recorded with a fenced ACK. Also where the choice came from (a handler chosen in setup
 * silently changes results otherwise).
 */
export type HandlerChoice =
  | { kind: 'builtin'; name: string; source: HandlerSource; handler: Handler }
  | { kind: 'module'; name: string; path: string; handler: Handler };

/**
 * `--handler` (or the config's `handler`, or v1) resolved and, for a module, imported.
 * The rules (and zod) are loaded here, only by the commands that run a handler.
 */
export async function chooseHandler(
  flag: string | undefined,
  config: () => OnceqConfig,
  cwd: string,
): Promise<HandlerChoice> {
  const { getHandler, isHandlerPath, loadHandlerModule } = await import('@onceq/handler');
  if (flag !== undefined && isHandlerPath(flag)) {
    const loaded = await loadHandlerModule(flag, cwd);
    return { kind: 'module', name: loaded.version, path: flag, handler: loaded.handle };
  }
  const { version, source } = resolveHandlerSource(flag, config);
  return { kind: 'builtin', name: version, source, handler: getHandler(version) };
}

/** `handler v2 (from onceq.config.json)`, `handler tips-1 (from ./tips.ts)`. */
export function describeChoice(choice: HandlerChoice): string {
  return choice.kind === 'module'
    ? `handler ${choice.name} (from ${choice.path})`
    : describeHandler(choice.name as Parameters<typeof describeHandler>[0], choice.source);
}

/** Where the choice came from, for `--json` output. */
export function choiceSource(choice: HandlerChoice): string {
  return choice.kind === 'module' ? choice.path : choice.source;
}

/** The `--handler` line of a command's help. */
export const HANDLER_FLAG_HELP: [string, string] = [
  '--handler <v1|v2|./file.ts>',
  'handler version, or your own module (default: config "handler", then v1)',
];
