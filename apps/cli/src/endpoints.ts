import type { DeliveryEndpoint } from '@onceq/core/webhooks';
import { CONFIG_FILE, type OnceqConfig } from './config.ts';
import { UsageError } from './errors.ts';

/**
 * The endpoints of `onceq.config.json`, each with its secrets read from the environment
 * variable it names (several `whsec_` secrets separated by spaces while one is rotated).
 * A variable that is not set is a usage error naming the variable, never its value.
 */
export function configuredEndpoints(
  config: OnceqConfig,
  env: Readonly<Record<string, string | undefined>>,
): DeliveryEndpoint[] {
  const entries = Object.entries(config.endpoints ?? {});
  if (entries.length === 0) {
    throw new UsageError(
      `no endpoints in ${CONFIG_FILE}: add "endpoints": {"billing": {"url": "https://…", "secret_env": "BILLING_WEBHOOK_SECRET"}}`,
    );
  }
  return entries.map(([name, e]) => {
    const value = env[e.secret_env];
    if (value === undefined || value.trim() === '') {
      throw new UsageError(
        `endpoint ${name}: the environment variable ${e.secret_env} is not set (it holds the endpoint's whsec_ secret)`,
      );
    }
    return {
      name,
      url: e.url,
      secrets: value.trim().split(/\s+/),
      ...(e.timeout_seconds === undefined
        ? {}
        : { timeoutMs: Math.round(e.timeout_seconds * 1000) }),
      ...(e.retry_schedule === undefined ? {} : { schedule: e.retry_schedule }),
      ...(e.concurrency === undefined ? {} : { concurrency: e.concurrency }),
    };
  });
}
