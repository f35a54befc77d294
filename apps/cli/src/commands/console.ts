import { DEFAULT_HOST, DEFAULT_PORT, MIN_TOKEN, startConsole, tokenProblem } from '@onceq/console';
import type { Handler } from '@onceq/core';
import { boolFlag, expectPositionals, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { chooseHandler, describeChoice, type HandlerChoice } from '../handler-choice.ts';
import { toJson } from '../output.ts';

interface ConsoleArgs {
  host: string;
  port: number;
  allowWrites: boolean;
  token: string | null;
  hideFields: string[];
  /** The handler redrive previews run; null: the built-in v1 and v2, v2 selected. */
  handler: HandlerChoice | null;
}

export const consoleCommand = defineCommand<ConsoleArgs>({
  name: 'console',
  summary: 'serve the web console: overview, messages, dead letters and redrive',
  flags: {
    port: {
      type: 'string',
      value: 'P',
      help: `port to listen on (default ${DEFAULT_PORT}; 0 picks a free one); a port another process holds is refused`,
    },
    host: {
      type: 'string',
      value: 'H',
      help: `address to bind (default ${DEFAULT_HOST}: this machine only)`,
    },
    'allow-writes': {
      type: 'boolean',
      help: 'allow redrives, after sign-in with the token printed at start',
    },
    token: {
      type: 'string',
      value: 'T',
      help: `the sign-in token (default $ONCEQ_CONSOLE_TOKEN; at least ${MIN_TOKEN} characters); when set, every page needs it`,
    },
    'hide-fields': {
      type: 'string',
      value: 'a,b',
      help: 'payload field names shown as (hidden), at any depth',
    },
    handler: {
      type: 'string',
      value: 'v1|v2|./file.ts',
      help: 'the handler redrive previews run: a version, or your own module (default: config "handler", else v1 and v2)',
    },
  },
  examples: [
    'console',
    'console --handler ./my-handler.ts',
    'console --host 0.0.0.0 --allow-writes   (with ONCEQ_CONSOLE_TOKEN set)',
  ],
  opensStore: true,
  async parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'console');
    const portText = stringFlag(values, 'port');
    const port = portText === undefined ? DEFAULT_PORT : Number(portText);
    if (portText !== undefined && (!/^[0-9]{1,5}$/.test(portText) || port > 65_535)) {
      throw new UsageError(
        `--port must be a whole number from 0 to 65535, got ${JSON.stringify(portText)}`,
      );
    }
    const host = stringFlag(values, 'host') ?? DEFAULT_HOST;
    if (!/^[A-Za-z0-9.:-]+$/.test(host)) {
      throw new UsageError(
        `--host must be a host name or an IP address, got ${JSON.stringify(host)}`,
      );
    }
    const token = stringFlag(values, 'token') ?? ctx.env.ONCEQ_CONSOLE_TOKEN ?? null;
    const weakness = token === null ? null : tokenProblem(token);
    if (weakness !== null) {
      const from = stringFlag(values, 'token') === undefined ? 'ONCEQ_CONSOLE_TOKEN' : '--token';
      throw new UsageError(`${from} ${weakness}`);
    }
    const hideText = stringFlag(values, 'hide-fields');
    const hideFields = hideText === undefined ? [] : hideText.split(',').map((f) => f.trim());
    if (hideFields.some((f) => f === '')) {
      throw new UsageError('--hide-fields takes field names separated by commas, e.g. email,card');
    }
    // The same resolution as work and worker: --handler, then the config's "handler".
    const chosen = await chooseHandler(stringFlag(values, 'handler'), config, ctx.cwd);
    return {
      host,
      port,
      allowWrites: boolFlag(values, 'allow-writes') === true,
      token,
      hideFields,
      handler: chosen.source === 'default' ? null : chosen,
    };
  },
  async run(args, { store, json, ctx }) {
    // A long-running command: it ends on SIGINT / SIGTERM and then closes the store
    // cleanly. The handlers go in before anything is printed, so a caller that stops
    // the console as soon as it has read the address cannot kill it half-way.
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    const running = startConsole({
      store,
      host: args.host,
      port: args.port,
      allowWrites: args.allowWrites,
      token: args.token,
      hideFields: args.hideFields,
      ...previewHandlers(args.handler),
      log: (line) => ctx.err(line),
    });
    for (const line of running.warnings) ctx.err(line);
    if (json) {
      ctx.out(
        toJson({
          url: running.url,
          allow_writes: args.allowWrites,
          token: running.tokenGenerated ? running.token : null,
          store: { kind: store.kind, location: store.location },
        }),
      );
    } else {
      ctx.out(`onceq console for ${store.location} (${store.kind})`);
      ctx.out(`  open ${running.url}`);
      if (!args.allowWrites) ctx.out('  read-only: start with --allow-writes to redrive');
      else if (running.tokenGenerated)
        ctx.out(`  writes allowed after sign-in; token (shown once): ${running.token}`);
      else ctx.out('  writes allowed after sign-in with your token');
      if (args.handler !== null) ctx.out(`  redrive previews run ${describeChoice(args.handler)}`);
      ctx.out('  stop with Ctrl-C');
    }
    await stopped;
    await running.stop();
    return 0;
  },
});

/**
 * What the redrive preview offers: your own module alone (the lesson's v1 and v2 know
 * nothing of your payloads), or the built-in versions with the chosen one selected.
 */
function previewHandlers(choice: HandlerChoice | null): {
  handlers?: Record<string, Handler>;
  defaultHandler?: string;
} {
  if (choice === null) return {};
  if (choice.kind === 'module') {
    return { handlers: { [choice.name]: choice.handler }, defaultHandler: choice.name };
  }
  return { defaultHandler: choice.name };
}
