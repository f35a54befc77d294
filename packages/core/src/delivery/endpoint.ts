/**
 * An endpoint deliveries go to, as the operator configures it (`onceq.config.json`'s
 * `endpoints`): never a URL taken from an event. A completion names an endpoint by name.
 */
import { secretKey } from './signature.ts';

/** An endpoint name: what a completion's `deliver[].to` says. */
export const ENDPOINT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The Standard Webhooks example schedule: the delay before each attempt, in seconds
 * (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h): ten attempts over
 * about three days. After the last one fails the delivery is dead.
 */
export const DEFAULT_SCHEDULE: readonly number[] = [
  0, 5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400,
];

/** Default {@link DeliveryEndpoint.timeoutMs}: an attempt without an answer by then has an unknown outcome. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/** Default {@link DeliveryEndpoint.concurrency}. */
export const DEFAULT_CONCURRENCY = 10;

/** The longest `Retry-After` honoured, in seconds (a day): a longer one waits a day. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** One configured endpoint. */
export interface DeliveryEndpoint {
  /** The name completions deliver `to`. */
  readonly name: string;
  /** Where every delivery of this endpoint is POSTed (`http:` or `https:`). */
  readonly url: string;
  /**
   * The `whsec_` secrets to sign with (every one signs each request, so a receiver keeps
   * verifying while a new secret is rolled out). At least one.
   */
  readonly secrets: readonly string[];
  /** How long an attempt may take, in ms. Default {@link DEFAULT_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /**
   * The delay before each attempt, in seconds; its length is the number of attempts.
   * Default {@link DEFAULT_SCHEDULE}.
   */
  readonly schedule?: readonly number[];
  /** How many attempts to this endpoint may be in flight at once. Default {@link DEFAULT_CONCURRENCY}. */
  readonly concurrency?: number;
}

/** An endpoint with its defaults filled in and its secrets decoded. */
export interface ResolvedEndpoint {
  readonly name: string;
  readonly url: string;
  readonly keys: readonly Uint8Array[];
  readonly timeoutMs: number;
  readonly schedule: readonly number[];
  readonly concurrency: number;
}

/** Thrown for an endpoint the sender cannot use; the message never holds a secret. */
export class EndpointConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EndpointConfigError';
  }
}

/** `endpoint` checked, its defaults applied: throws {@link EndpointConfigError} naming the field at fault. */
export function resolveEndpoint(endpoint: DeliveryEndpoint): ResolvedEndpoint {
  const bad = (why: string) => new EndpointConfigError(`endpoint ${endpoint.name}: ${why}`);
  if (!ENDPOINT_NAME.test(endpoint.name)) {
    throw new EndpointConfigError(
      `endpoint name ${JSON.stringify(endpoint.name)}: a name is 1 to 64 letters, digits, _ or -`,
    );
  }
  let url: URL;
  try {
    url = new URL(endpoint.url);
  } catch {
    throw bad('url is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw bad('url must be http: or https:');
  if (endpoint.secrets.length === 0)
    throw bad('no secret (at least one whsec_ secret signs requests)');
  const keys = endpoint.secrets.map((secret, i) => {
    const key = secretKey(secret);
    if ('problem' in key) throw bad(`secret ${i + 1}: ${key.problem}`);
    return key.key;
  });
  const timeoutMs = endpoint.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000) {
    throw bad('timeout must be a whole number of ms from 1 to 600000');
  }
  const schedule = endpoint.schedule ?? DEFAULT_SCHEDULE;
  if (
    schedule.length === 0 ||
    schedule.length > 100 ||
    !schedule.every((s) => Number.isInteger(s) && s >= 0 && s <= 30 * 86_400)
  ) {
    throw bad('the retry schedule must be 1 to 100 whole numbers of seconds, each at most 30 days');
  }
  const concurrency = endpoint.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1000) {
    throw bad('concurrency must be a whole number from 1 to 1000');
  }
  return { name: endpoint.name, url: url.href, keys, timeoutMs, schedule, concurrency };
}

/** The `webhook-id` of a delivery: its event id and key (a key holds no `:`, so this is one-to-one). */
export function webhookId(eventId: string, key: string): string {
  return `${eventId}:${key}`;
}
