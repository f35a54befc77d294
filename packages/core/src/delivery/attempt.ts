/**
 * One HTTP attempt of one delivery, and what its answer means: the Standard Webhooks
 * headers (the same `webhook-id` on every attempt, this attempt's `webhook-timestamp`, a
 * `v1` signature per secret over the stored body bytes), then 2xx = delivered, 410 =
 * the endpoint is gone, anything else (a redirect included), a timeout or a broken
 * connection = not delivered, retried under the same id on the endpoint's schedule.
 */
import type { Clock } from '../clock.ts';
import type { AttemptRecord, ClaimedDelivery, DeliveryOutcome } from '../driver/sql/deliveries.ts';
import { MAX_RETRY_AFTER_SECONDS, type ResolvedEndpoint, webhookId } from './endpoint.ts';
import { signatureHeader } from './signature.ts';

/** How much of a response the attempt log keeps, in characters. */
export const RESPONSE_EXCERPT = 200;

/** Sends `delivery` to `endpoint` once and returns the record of the attempt. Never throws. */
export async function attemptDelivery(
  endpoint: ResolvedEndpoint,
  delivery: ClaimedDelivery,
  clock: Clock,
): Promise<AttemptRecord> {
  const id = webhookId(delivery.eventId, delivery.key);
  const timestamp = clock();
  const started = performance.now();
  const latency = () => Math.max(0, Math.round(performance.now() - started));
  const signal = AbortSignal.timeout(endpoint.timeoutMs);
  let response: Response;
  try {
    response = await fetch(endpoint.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'onceq-webhooks',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(endpoint.keys, id, timestamp, delivery.body),
      },
      body: delivery.body,
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    const why = signal.aborted
      ? `no answer within ${endpoint.timeoutMs} ms (outcome unknown)`
      : `the connection failed (${errorCode(error)})`;
    return {
      delivery,
      outcome: failed(endpoint, delivery, null),
      status: null,
      latencyMs: latency(),
      response: null,
      error: why,
    };
  }
  const status = response.status;
  const excerpt = await readExcerpt(response);
  const latencyMs = latency();
  if (status >= 200 && status < 300) {
    return {
      delivery,
      outcome: { kind: 'delivered' },
      status,
      latencyMs,
      response: excerpt,
      error: null,
    };
  }
  if (status === 410) {
    return {
      delivery,
      outcome: { kind: 'gone' },
      status,
      latencyMs,
      response: excerpt,
      error: 'the endpoint answered 410 Gone: it is disabled until enabled again',
    };
  }
  const retryAfter =
    status === 429 || status === 503
      ? retryAfterSeconds(response.headers.get('retry-after'), clock())
      : null;
  return {
    delivery,
    outcome: failed(endpoint, delivery, retryAfter),
    status,
    latencyMs,
    response: excerpt,
    error:
      status >= 300 && status < 400
        ? `a redirect (${status}) is not a delivery`
        : `the endpoint answered ${status}`,
  };
}

/** A failed attempt: retried after the schedule's next delay (or `Retry-After`, if longer), or dead when the schedule is spent. */
function failed(
  endpoint: ResolvedEndpoint,
  delivery: ClaimedDelivery,
  retryAfter: number | null,
): DeliveryOutcome {
  const next = endpoint.schedule[delivery.attempt];
  if (next === undefined) return { kind: 'dead' };
  return { kind: 'retry', delaySeconds: Math.max(next, retryAfter ?? 0) };
}

/** `Retry-After` as seconds from `now` (a number of seconds or an HTTP date), capped; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  let seconds: number;
  if (/^[0-9]{1,10}$/.test(text)) seconds = Number(text);
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    seconds = Math.ceil(at / 1000) - now;
  }
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, seconds));
}

/** The most bytes the excerpt can need: a character is at most 4 bytes of UTF-8. */
const EXCERPT_BYTES = RESPONSE_EXCERPT * 4;

const excerptDecoder = new TextDecoder();

/** The first {@link RESPONSE_EXCERPT} characters of the body, printable; null when there is none or it cannot be read. */
async function readExcerpt(response: Response): Promise<string | null> {
  try {
    // A body whose declared length fits the excerpt is read whole (HTTP framing holds it
    // to that length), without a stream reader's cost per attempt; any other only as far
    // as the excerpt needs.
    const declared = response.headers.get('content-length');
    const bytes =
      declared !== null && Number(declared) <= EXCERPT_BYTES
        ? await response.bytes()
        : await firstBytes(response);
    if (bytes === null) return null;
    const text = excerptDecoder.decode(bytes).slice(0, RESPONSE_EXCERPT);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed.
    const clean = text.replace(/[\u0000-\u001f\u007f]/g, ' ');
    return clean === '' ? null : clean;
  } catch {
    return null;
  }
}

/** The body's first chunks, at least {@link EXCERPT_BYTES} of them when it is that long; the rest is not read. */
async function firstBytes(response: Response): Promise<Uint8Array | null> {
  const reader = response.body?.getReader();
  if (reader === undefined) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < EXCERPT_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
  }
  reader.cancel().catch(() => {});
  return Buffer.concat(chunks);
}

/** A connection error's code (`ECONNRESET`, `ConnectionRefused`), never its message: it may carry the URL. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Za-z_]{1,40}$/.test(code) ? code : 'no answer';
}
