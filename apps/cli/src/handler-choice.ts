import type { Handler } from '@onceq/core';
import type { OnceqConfig } from './config.ts';
import { CONFIG_FILE, describeHandler, type HandlerSource, resolveHandlerSpec } from './config.ts';
import type { FlagSpec } from './flags.ts';
import { loadHandlerModule } from './handler-module.ts';

/**
 * The handler a command runs: a built-in version (`v1`, `v2`) or your own module
 * (`--handler ./my-handler.ts`, or `"handler"` in onceq.config.json); either runs outside
 * any transaction and its result is recorded with a fenced ACK. Also where the choice
 * came from (a handler chosen in setup silently changes results otherwise).
 */
export type HandlerChoice =
  | { kind: 'builtin'; name: string; source: HandlerSource; handler: Handler }
  | {
      kind: 'module';
      name: string;
      /** The path as written (in the flag or the config file). */
      path: string;
      source: 'flag' | 'config';
      handler: Handler;
    };

/**
 * `flag` (named `label` in messages; default `--handler`), or the config's `handler`, or
 * v1, resolved and, for a module, imported. The rules (and zod) are loaded here, only by
 * the commands that run a handler.
 */
export async function chooseHandler(
  flag: string | undefined,
  config: () => OnceqConfig,
  cwd: string,
  label = '--handler',
): Promise<HandlerChoice> {
  const spec = resolveHandlerSpec(flag, config, cwd, label);
  if (spec.kind === 'module') {
    const where = spec.source === 'flag' ? label : `"handler" in ${CONFIG_FILE}:`;
    const loaded = await loadHandlerModule(spec.spec, spec.base, where);
    return {
      kind: 'module',
      name: loaded.version,
      path: spec.spec,
      source: spec.source,
      handler: loaded.handle,
    };
  }
  const { handlers } = await import('@onceq/handler');
  return {
    kind: 'builtin',
    name: spec.version,
    source: spec.source,
    handler: handlers[spec.version],
  };
}

/** `handler v2 (from onceq.config.json)`, `handler tips-1 (from ./tips.ts)`. */
export function describeChoice(choice: HandlerChoice): string {
  if (choice.kind === 'builtin') return describeHandler(choice.name, choice.source);
  const inConfig = choice.source === 'config' ? ` in ${CONFIG_FILE}` : '';
  return `handler ${choice.name} (from ${choice.path}${inConfig})`;
}

/** Where the choice came from, for `--json` output. */
export function choiceSource(choice: HandlerChoice): string {
  return choice.kind === 'module' ? choice.path : choice.source;
}

/** The `--handler` flag of the commands that run a handler. */
export const HANDLER_FLAG = {
  type: 'string',
  value: 'v1|v2|./file.ts',
  help: 'handler version, or your own module (default: config "handler", then v1)',
} as const satisfies FlagSpec;
