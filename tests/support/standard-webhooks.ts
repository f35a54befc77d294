/**
 * Standard Webhooks `v1` signatures written from the specification's text with WebCrypto,
 * importing nothing of onceq: what the tests sign requests with and check deliveries
 * against, so a mistake in core's signature.ts cannot hide behind the same mistake in
 * its test. The secret is base64 after the `whsec_` prefix; the signed content is
 * `${msg_id}.${timestamp}.${payload}` over the exact body bytes; the signature is
 * `v1,<base64 of the HMAC-SHA256>`, several of them space-separated.
 */

/** The HMAC key of a `whsec_` secret. */
export function hmacKey(secret: string): Promise<CryptoKey> {
  if (!secret.startsWith('whsec_')) throw new Error('a Standard Webhooks secret starts whsec_');
  return crypto.subtle.importKey(
    'raw',
    Uint8Array.from(atob(secret.slice('whsec_'.length)), (c) => c.charCodeAt(0)),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
}

/** One `v1,<base64>` signature of `body` under `key` (a secret or its key). */
export async function v1Signature(
  key: string | CryptoKey,
  id: string,
  timestamp: number | string,
  body: string | Uint8Array,
): Promise<string> {
  const k = typeof key === 'string' ? await hmacKey(key) : key;
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + bytes.length);
  content.set(prefix);
  content.set(bytes, prefix.length);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', k, content));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}

/** Whether one of the space-separated entries of `signature` is `key`'s over `body`. */
export async function signedBy(
  key: string | CryptoKey,
  id: string,
  timestamp: number | string,
  signature: string,
  body: string | Uint8Array,
): Promise<boolean> {
  const expected = await v1Signature(key, id, timestamp, body);
  return signature.split(' ').includes(expected);
}
