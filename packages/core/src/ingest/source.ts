/**
 * A webhook source as the operator configures it: the path it posts to, how its requests
 * are verified (Standard Webhooks signatures, or a token for senders that do not sign),
 * and where its event id is (the `webhook-id` header, another header such as GitHub's
 * `X-GitHub-Delivery`, or a top-level field of the body such as Stripe's `id`).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { DEFAULT_TOLERANCE_SECONDS, secretKey, verifySignature } from '../delivery/signature.ts';

export interface IngestSource {
  /** A name for messages (`github`, `stripe`). */
  readonly name: string;
  /** The request path this source posts to, exactly (`/hooks/github`). */
  readonly path: string;
  readonly verify:
    | {
        readonly kind: 'standard-webhooks';
        /** The `whsec_` secrets accepted (several while one is rotated). */
        readonly secrets: readonly string[];
        /** How far `webhook-timestamp` may be from now, in seconds. Default 300. */
        readonly toleranceSeconds?: number;
      }
    | {
        readonly kind: 'token';
        /** The tokens accepted (several while one is rotated), at least 16 characters each. */
        readonly tokens: readonly string[];
        /** The header carrying it; default `authorization`, as `Bearer <token>`. */
        readonly header?: string;
      };
  /**
   * Where the event id is. Default: the `webhook-id` header. A token source must name a
   * header or a body field.
   */
  readonly eventId?: { readonly header: string } | { readonly field: string };
}

/** A source checked once: keys decoded, token digests taken. */
export interface ResolvedSource {
  readonly name: string;
  readonly path: string;
  /** Why the request is refused (401), or null when it verifies. */
  check(headers: Headers, body: Uint8Array, now: number): string | null;
  readonly eventId: { readonly header: string } | { readonly field: string };
}

export class SourceConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceConfigError';
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** `source` checked (throws {@link SourceConfigError} naming the field, never a secret). */
export function resolveSource(source: IngestSource): ResolvedSource {
  const bad = (why: string) => new SourceConfigError(`source ${source.name}: ${why}`);
  if (!/^\/[A-Za-z0-9/_.-]{0,200}$/.test(source.path)) {
    throw bad('path must start with / and hold letters, digits, /, _, . or -');
  }
  const verify = source.verify;
  if (verify.kind === 'standard-webhooks') {
    if (verify.secrets.length === 0) throw bad('no secret');
    const keys = verify.secrets.map((secret, i) => {
      const key = secretKey(secret);
      if ('problem' in key) throw bad(`secret ${i + 1}: ${key.problem}`);
      return key.key;
    });
    const tolerance = verify.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    const reasons = {
      missing_headers: 'webhook-id, webhook-timestamp and webhook-signature are all required',
      stale_timestamp: `webhook-timestamp is more than ${tolerance} s away from now`,
      bad_signature: 'no signature matches',
    } as const;
    return {
      name: source.name,
      path: source.path,
      eventId: source.eventId ?? { header: 'webhook-id' },
      check(headers, body, now) {
        const failure = verifySignature(
          keys,
          {
            id: headers.get('webhook-id'),
            timestamp: headers.get('webhook-timestamp'),
            signature: headers.get('webhook-signature'),
          },
          body,
          now,
          tolerance,
        );
        return failure === null ? null : reasons[failure];
      },
    };
  }
  if (verify.tokens.length === 0 || verify.tokens.some((t) => t.length < 16)) {
    throw bad('a token must be at least 16 characters');
  }
  if (source.eventId === undefined) {
    throw bad('a token source needs its event id: a header or a body field');
  }
  const header = (verify.header ?? 'authorization').toLowerCase();
  const expected = verify.tokens.map((t) => digest(header === 'authorization' ? `Bearer ${t}` : t));
  return {
    name: source.name,
    path: source.path,
    eventId: source.eventId,
    check(headers) {
      const given = digest(headers.get(header) ?? '');
      // Digests of equal length, every token compared: constant time in the token.
      let matched = false;
      for (const token of expected) if (timingSafeEqual(token, given)) matched = true;
      return matched ? null : `the ${header} header does not hold a valid token`;
    },
  };
}
