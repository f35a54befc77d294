import { resolveSource } from '@onceq/core/internal';
import { createIngest, type IngestSource, SourceConfigError } from '@onceq/core/webhooks';
import { expectPositionals, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { CONFIG_FILE, type OnceqConfig } from '../config.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

/** Where `onceq serve` listens unless told otherwise: this machine only. */
export const SERVE_HOST = '127.0.0.1';
export const SERVE_PORT = 8788;

interface ServeArgs {
  sources: IngestSource[];
  host: string;
  port: number;
}

export const serveCommand = defineCommand<ServeArgs>({
  name: 'serve',
  summary:
    'accept webhooks on the sources of onceq.config.json: verified, deduplicated, 2xx only after commit',
  flags: {
    port: {
      type: 'string',
      value: 'P',
      help: `port to listen on (default ${SERVE_PORT}; 0 picks a free one)`,
    },
    host: {
      type: 'string',
      value: 'H',
      help: `address to bind (default ${SERVE_HOST}: this machine only; put TLS in front for the internet)`,
    },
  },
  notes: [
    [
      'sources',
      'onceq.config.json\'s "sources": path, verify (standard-webhooks | token), secret_env, event_id_header / event_id_field',
    ],
    [
      'answers',
      '200 stored (a duplicate too) · 400 malformed · 401 not verified · 409 conflicting payload · 413 too big · 503 retry',
    ],
  ],
  examples: ['serve', 'serve --port 0 --json'],
  opensStore: true,
  parse({ values, positionals, config, ctx }) {
    expectPositionals(positionals, [], 'serve');
    // Checked before the store is opened: a missing or bad secret creates nothing.
    const sources = configuredSources(config(), ctx.env);
    const paths = new Set<string>();
    for (const source of sources) {
      if (paths.has(source.path)) {
        throw new UsageError(
          `source ${source.name}: another source already posts to ${source.path}`,
        );
      }
      paths.add(source.path);
      try {
        resolveSource(source);
      } catch (error) {
        if (error instanceof SourceConfigError) throw new UsageError(error.message);
        throw error;
      }
    }
    const portText = stringFlag(values, 'port');
    const port = portText === undefined ? SERVE_PORT : Number(portText);
    if (portText !== undefined && (!/^[0-9]{1,5}$/.test(portText) || port > 65_535)) {
      throw new UsageError(
        `--port must be a whole number from 0 to 65535, got ${JSON.stringify(portText)}`,
      );
    }
    const host = stringFlag(values, 'host') ?? SERVE_HOST;
    if (!/^[A-Za-z0-9.:-]+$/.test(host)) {
      throw new UsageError(
        `--host must be a host name or an IP address, got ${JSON.stringify(host)}`,
      );
    }
    return { sources, host, port };
  },
  async run(args, { store, json, ctx, config }) {
    const stop = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    const ingest = createIngest(store, { sources: args.sources });
    let server: ReturnType<typeof Bun.serve>;
    try {
      server = Bun.serve({
        hostname: args.host,
        port: args.port,
        // A second server on a busy port must fail, not share its traffic.
        reusePort: false,
        development: false,
        fetch: (request) => ingest.fetch(request),
        error: () => new Response('{"error":"internal error"}\n', { status: 500 }),
      });
    } catch (error) {
      const busy =
        (error as { code?: string }).code === 'EADDRINUSE' || /in use/.test(String(error));
      throw new UsageError(
        busy
          ? `cannot listen on ${args.host}:${args.port}: the port is in use, pick another with --port`
          : `cannot listen on ${args.host}:${args.port}: ${(error as Error).message}`,
      );
    }
    const url = `http://${args.host}:${server.port}`;
    if (json) ctx.out(toJson({ url, sources: Object.keys(config().sources ?? {}) }));
    else {
      ctx.out(`onceq serve for ${store.location} (${store.kind})`);
      for (const [name, s] of Object.entries(config().sources ?? {}))
        ctx.out(`  ${name}: POST ${url}${s.path}`);
      ctx.out('  stop with Ctrl-C');
    }
    await stop;
    // No new request; every one received is answered (its commit awaited) before the store closes.
    await server.stop();
    await ingest.drain();
    return 0;
  },
});

/** The sources of `onceq.config.json`, each with its secrets or tokens from the environment variable it names. */
function configuredSources(
  config: OnceqConfig,
  env: Readonly<Record<string, string | undefined>>,
): IngestSource[] {
  const entries = Object.entries(config.sources ?? {});
  if (entries.length === 0) {
    throw new UsageError(
      `no sources in ${CONFIG_FILE}: add "sources": {"billing": {"path": "/hooks/billing", "verify": "standard-webhooks", "secret_env": "BILLING_HOOK_SECRET"}}`,
    );
  }
  return entries.map(([name, s]) => {
    const value = env[s.secret_env];
    if (value === undefined || value.trim() === '') {
      throw new UsageError(
        `source ${name}: the environment variable ${s.secret_env} is not set (it holds the source's ${s.verify === 'token' ? 'token' : 'whsec_ secret'})`,
      );
    }
    const values = value.trim().split(/\s+/);
    const eventId =
      s.event_id_header !== undefined
        ? { header: s.event_id_header }
        : s.event_id_field !== undefined
          ? { field: s.event_id_field }
          : undefined;
    return {
      name,
      path: s.path,
      verify:
        s.verify === 'token'
          ? {
              kind: 'token',
              tokens: values,
              ...(s.token_header === undefined ? {} : { header: s.token_header }),
            }
          : {
              kind: 'standard-webhooks',
              secrets: values,
              ...(s.tolerance_seconds === undefined
                ? {}
                : { toleranceSeconds: s.tolerance_seconds }),
            },
      ...(eventId === undefined ? {} : { eventId }),
    };
  });
}
