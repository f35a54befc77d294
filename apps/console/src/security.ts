/**
 * Who may do what. Reading needs nothing on a loopback console unless an operator set a
 * token; writing needs `--allow-writes`, a signed-in session (the token, once) and, on
 * every write, the session's CSRF token in the form plus an `Origin` equal to the page's
 * own. The session cookie is HttpOnly and SameSite=Strict. The Host header is checked
 * on a loopback console so a DNS-rebinding page cannot read it from another origin.
 */
import { timingSafeEqual } from 'node:crypto';
import { forbidden } from './errors.ts';

export const SESSION_COOKIE = 'onceq_console';
/** Sessions expire after this long, seconds. Default 12 h. */
export const SESSION_SECONDS = 12 * 3600;

export interface Session {
  id: string;
  csrf: string;
  /** The client address that signed in, for the write log. */
  client: string;
  /** Unix ms. */
  createdAt: number;
}

/** A random token: 24 bytes, base64url (the printed start-up token, session ids, CSRF tokens). */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url');
}

/** Constant-time comparison of two secrets. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** In-memory sessions of this console process (a restart signs everyone out). */
export class Sessions {
  readonly #byId = new Map<string, Session>();

  create(client: string): Session {
    const session = { id: randomToken(), csrf: randomToken(), client, createdAt: Date.now() };
    this.#byId.set(session.id, session);
    return session;
  }

  /** The session named by the request's cookie, if it exists and has not expired. */
  fromRequest(req: Request): Session | null {
    const id = cookie(req, SESSION_COOKIE);
    if (id === null) return null;
    const session = this.#byId.get(id);
    if (session === undefined) return null;
    if (Date.now() - session.createdAt > SESSION_SECONDS * 1000) {
      this.#byId.delete(id);
      return null;
    }
    return session;
  }

  end(session: Session): void {
    this.#byId.delete(session.id);
  }
}

function cookie(req: Request, name: string): string | null {
  const header = req.headers.get('cookie');
  if (header === null) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The Set-Cookie value of a new session. */
export function sessionCookie(session: Session): string {
  return `${SESSION_COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_SECONDS}`;
}

/** The Set-Cookie value that ends a session in the browser. */
export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** True for a host name or address that only this machine can reach. */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || host.startsWith('127.');
}

function hostName(hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  const colon = hostHeader.lastIndexOf(':');
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon);
}

/**
 * Refuses (403) a request to a loopback console whose Host header names another host:
 * that is what a DNS-rebinding page sends.
 */
export function checkHost(req: Request, boundToLoopback: boolean): void {
  if (!boundToLoopback) return;
  const host = req.headers.get('host');
  if (host === null || !isLoopback(hostName(host))) {
    throw forbidden('bad_host', `the Host header ${JSON.stringify(host)} is not this console`);
  }
}

/**
 * Refuses (403) a state-changing request whose Origin is missing or is not this page's
 * own origin (`http://<Host>`): a form posted from another site.
 */
export function checkOrigin(req: Request): void {
  const origin = req.headers.get('origin');
  const host = req.headers.get('host');
  if (origin === null || host === null || origin !== `http://${host}`) {
    throw forbidden(
      'bad_origin',
      `write refused: the request came from ${origin === null ? 'an unknown origin' : JSON.stringify(origin)}, not from this console`,
    );
  }
}
