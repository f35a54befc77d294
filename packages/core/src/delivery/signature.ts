/**
 * Standard Webhooks signatures (version `v1`, HMAC-SHA256), both ways: the sender signs
 * `${id}.${timestamp}.${body}` with every current secret, the receiver accepts a request
 * when one of its secrets matches one listed signature, compared in constant time, and
 * its timestamp is within the tolerance. A secret is written `whsec_<base64>`; the key is
 * the decoded bytes. Nothing here prints a secret or a key: errors name the problem only.
 */
import { timingSafeEqual } from 'node:crypto';

/** The prefix of a Standard Webhooks secret. */
export const SECRET_PREFIX = 'whsec_';

/** How far a request's timestamp may be from the receiver's clock, in seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * The HMAC key of a `whsec_` secret, or one sentence saying what is wrong with it (never
 * the secret itself). The decoded key must be 24 to 64 bytes, as the specification asks.
 */
export function secretKey(secret: string): { key: Uint8Array } | { problem: string } {
  if (!secret.startsWith(SECRET_PREFIX)) {
    return { problem: `a secret must start with ${SECRET_PREFIX} followed by base64` };
  }
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    return { problem: `the part after ${SECRET_PREFIX} must be standard base64` };
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < 24 || key.length > 64) {
    return { problem: `a secret must decode to 24 to 64 bytes, this one is ${key.length}` };
  }
  return { key: new Uint8Array(key) };
}

function mac(key: Uint8Array, id: string, timestamp: number, body: string | Uint8Array): Buffer {
  // Bun's native HMAC: the same bytes as node:crypto's createHmac, at a fraction of its
  // cost per call (one per request received and per attempt sent).
  const hmac = new Bun.CryptoHasher('sha256', key);
  hmac.update(`${id}.${timestamp}.`);
  hmac.update(body);
  return hmac.digest();
}

/** The `webhook-signature` header: `v1,<base64>` for each key, space-separated. */
export function signatureHeader(
  keys: readonly Uint8Array[],
  id: string,
  timestamp: number,
  body: string | Uint8Array,
): string {
  return keys.map((key) => `v1,${mac(key, id, timestamp, body).toString('base64')}`).join(' ');
}

/** Why a signed request was refused. */
export type VerifyFailure = 'missing_headers' | 'stale_timestamp' | 'bad_signature';

/**
 * Checks a Standard Webhooks request: all three headers present, the timestamp within
 * `toleranceSeconds` of `now`, and one `v1` signature made by one of `keys` over the
 * exact body bytes (constant-time comparison). Returns null when it verifies.
 */
export function verifySignature(
  keys: readonly Uint8Array[],
  headers: { id: string | null; timestamp: string | null; signature: string | null },
  body: Uint8Array,
  now: number,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
): VerifyFailure | null {
  const { id, timestamp, signature } = headers;
  if (id === null || timestamp === null || signature === null || id === '') {
    return 'missing_headers';
  }
  if (!/^[0-9]{1,12}$/.test(timestamp)) return 'stale_timestamp';
  const seconds = Number(timestamp);
  if (Math.abs(now - seconds) > toleranceSeconds) return 'stale_timestamp';
  const given: Buffer[] = [];
  for (const part of signature.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
    given.push(Buffer.from(part.slice(comma + 1), 'base64'));
  }
  let matched = false;
  for (const key of keys) {
    const expected = mac(key, id, seconds, body);
    for (const candidate of given) {
      // Every pair is compared (no early exit), each in constant time.
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
        matched = true;
      }
    }
  }
  return matched ? null : 'bad_signature';
}
